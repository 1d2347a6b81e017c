// What storing answers of the files it could not store, shared by storing, the daemon's keeper
// and a publish's answer without those importing each other.

/** A file that was not stored, and why. */
export interface NotStored { readonly folder: string, readonly path: string, readonly reason: string, readonly code: string }

/** What a publish says of the content it waited for (`cidsync snapshot` prints it and exits 1 on any file not stored). */
export interface PublishedContent {
  readonly storedFiles: number
  readonly storedBytes: number
  readonly notStored: readonly NotStored[]
  /** The pass itself failed (the service unreachable...): what it said. */
  readonly error?: string
}
