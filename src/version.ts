import { PACKAGE_MANIFEST } from './package-root.js'

/** This build's version, from package.json. */
export const VERSION: string = PACKAGE_MANIFEST.version
