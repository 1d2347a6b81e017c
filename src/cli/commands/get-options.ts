/** What `get` and `restore --files` take. */
export interface GetOptions { from?: string, config?: string, to?: string, at?: string, device?: string, overwrite?: boolean, json?: boolean, dryRun?: boolean, delete?: boolean }
