import type { CidProfile } from '../../content/index.js'
import { HttpFailure } from '../http.js'

const KUBO_DEFAULT_CHUNK = 262_144
const KUBO_DEFAULT_LINKS = 174
const MAX_CHUNK = 1024 * 1024

/** What `/api/v0/add` was asked to do, read from its query. */
export interface AddRequest {
  readonly profile: CidProfile
  /** `wrap-with-directory`: every part under one directory, answered last with the name "". */
  readonly wrap: boolean
  /** `only-hash`: CIDs computed and answered; nothing stored, listed or counted against a quota. */
  readonly onlyHash: boolean
  /** `progress`: a `{Name, Bytes}` line as each 256 KiB of a file is read, and at its end. */
  readonly progress: boolean
  /**
   * `stream-channels` sent (Kubo's clients send it): the answer is Kubo's lines. Without it, an
   * upload that makes one root is answered with that root alone, as production answers: its SDK
   * parses the whole body as one JSON value.
   */
  readonly lines: boolean
}

export function flag (url: URL, name: string): boolean | undefined {
  const value = url.searchParams.get(name)
  if (value === null) return undefined
  if (value === 'true' || value === '1' || value === '') return true
  if (value === 'false' || value === '0') return false
  throw new HttpFailure(400, `${name} must be true or false`)
}

/** Kubo `add` parameters read into the request below. */
const READ = new Set(['cid-version', 'raw-leaves', 'chunker', 'max-file-links', 'wrap-with-directory', 'only-hash', 'progress'])
/**
 * Taken and left to the client: `timeout` is Kubo's deadline for the command (clients enforce
 * their own); `pin=false` answers as Kubo does, but this service never collects what it stores,
 * and lists it as with `pin=true` (an unlisted upload would escape the account's quota).
 */
const TAKEN = new Set(['timeout', 'pin'])
const GO_DURATION = /^(?:\d{1,12}(?:\.\d{1,9})?(?:ns|us|µs|ms|s|m|h)){1,4}$/
/** Kubo parameters implemented at one value only (Kubo's default): a flag that must be false... */
const FALSE_ONLY = new Set(['trickle', 'inline', 'nocopy', 'fscache', 'quiet', 'quieter', 'silent', 'preserve-mode', 'preserve-mtime'])
/** ...or a value that must be this. */
const FIXED: Readonly<Record<string, readonly string[]>> = { hash: ['sha2-256'], 'stream-channels': ['true', 'false', ''], encoding: ['json'] }

/**
 * Refuses, naming it, any parameter this service would otherwise ignore: a client that asked for
 * `hash=blake2b-256` or `trickle=true` must not get a CID made some other way without being told.
 */
function refuseUnimplemented (url: URL): void {
  for (const [name, value] of url.searchParams) {
    if (READ.has(name)) continue
    if (TAKEN.has(name)) {
      if (name === 'pin') flag(url, name)
      else if (!GO_DURATION.test(value)) throw new HttpFailure(400, `${name} must be a duration such as 30s or 1m30s`)
      continue
    }
    if (FALSE_ONLY.has(name)) {
      if (flag(url, name) === true) throw new HttpFailure(400, `${name}=${value.slice(0, 40)} is not implemented by this service: leave it out or send ${name}=false`)
      continue
    }
    const allowed = FIXED[name]
    if (allowed === undefined) throw new HttpFailure(400, `parameter ${name.slice(0, 40)} is not implemented by this service`)
    if (!allowed.includes(value)) throw new HttpFailure(400, `${name}=${value.slice(0, 40)} is not implemented by this service: only ${name}=${allowed[0] as string}`)
  }
}

/** Kubo's `add` parameters as an import profile; Kubo's own defaults where one is absent. */
export function profileFromQuery (url: URL): CidProfile {
  refuseUnimplemented(url)
  const version = url.searchParams.get('cid-version') ?? '0'
  if (version !== '0' && version !== '1') throw new HttpFailure(400, 'cid-version must be 0 or 1')
  const chunker = url.searchParams.get('chunker') ?? `size-${KUBO_DEFAULT_CHUNK}`
  const size = /^size-(\d+)$/.exec(chunker)
  if (size === null || Number(size[1]) < 1 || Number(size[1]) > MAX_CHUNK) throw new HttpFailure(400, `chunker=${chunker.slice(0, 40)} is not implemented by this service: use size-N, N up to ${MAX_CHUNK}`)
  const links = Number(url.searchParams.get('max-file-links') ?? KUBO_DEFAULT_LINKS)
  if (!Number.isInteger(links) || links < 2 || links > 4096) throw new HttpFailure(400, 'max-file-links must be from 2 to 4096')
  const cidVersion = version === '1' ? 1 : 0
  const rawLeaves = flag(url, 'raw-leaves') ?? cidVersion === 1
  if (cidVersion === 0 && rawLeaves) throw new HttpFailure(400, 'raw-leaves=true with cid-version=0 is not implemented by this service: send cid-version=1, or raw-leaves=false')
  // The name is only a label; the builder reads the parameters.
  return { name: 'kubo-cidv1', cidVersion, chunkSize: Number(size[1]), maxLinks: links, rawLeaves }
}

/** Everything `/api/v0/add` reads from its query, or a 400 naming what it does not implement. */
export function addRequest (url: URL): AddRequest {
  const profile = profileFromQuery(url)
  return {
    profile,
    wrap: flag(url, 'wrap-with-directory') ?? false,
    onlyHash: flag(url, 'only-hash') ?? false,
    progress: flag(url, 'progress') ?? false,
    lines: url.searchParams.has('stream-channels') && flag(url, 'stream-channels') !== false
  }
}
