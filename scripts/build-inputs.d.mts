// The types of build-inputs.mjs, for the tests that ask whether dist/ is current.
export function buildInputsDigest (root: string): string
export function writeBuildStamp (root: string, digest: string): void
export function builtFromCurrentInputs (root: string): boolean
