import { readFileSync } from 'node:fs'

// src/version.ts and dist/version.js both sit one level below the package root.
const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }

/** This build's version, from package.json. */
export const VERSION: string = manifest.version
