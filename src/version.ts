/** This build's version, from package.json (read at the first call: see package-root.ts). */
export { packageVersion as cidsyncVersion } from './package-root.js'
