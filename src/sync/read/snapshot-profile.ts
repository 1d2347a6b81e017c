import { cidProfile } from '../../content/index.js'

/** Snapshots are UnixFS files under Kubo's CIDv1 profile, which the upload names explicitly. */
export const SNAPSHOT_PROFILE = cidProfile('kubo-cidv1')
