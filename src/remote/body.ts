import type { z } from 'zod'
import { RemoteResponseError, type RemoteContext } from '../errors.js'
import { formatBytes } from '../util/format-bytes.js'

const EXCERPT_CHARS = 200

/**
 * The useful part of an error body: production sends `{"error": "..."}`,
 * `{"error": {"message": ...}}` or `{"error": [{"message": ...}]}`; anything else is cut short.
 */
export function describeErrorBody (text: string): string {
  try {
    const body = JSON.parse(text) as { error?: unknown, message?: unknown }
    const error = body.error ?? body.message
    if (typeof error === 'string') return error.slice(0, EXCERPT_CHARS)
    const first = Array.isArray(error) ? error[0] : error
    if (typeof first === 'object' && first !== null && typeof (first as { message?: unknown }).message === 'string') {
      return (first as { message: string }).message.slice(0, EXCERPT_CHARS)
    }
  } catch {
    // not JSON: fall through to the raw text
  }
  const flat = text.replace(/\s+/g, ' ').trim()
  return flat.length > EXCERPT_CHARS ? `${flat.slice(0, EXCERPT_CHARS)}…` : flat
}

/**
 * Parses a JSON answer with `schema`, bare or wrapped in `{data: ...}` (the reference SDK's
 * wrapping, which some deployments send too).
 */
export function parseBody<S extends z.ZodType> (context: RemoteContext, text: string, schema: S): z.output<S> {
  let json: unknown
  try {
    json = text === '' ? undefined : JSON.parse(text)
  } catch {
    throw new RemoteResponseError(context, `answered with a body that is not JSON: ${describeErrorBody(text)}`)
  }
  const bare = schema.safeParse(json)
  if (bare.success) return bare.data
  if (typeof json === 'object' && json !== null && 'data' in json) {
    const wrapped = schema.safeParse((json as { data: unknown }).data)
    if (wrapped.success) return wrapped.data
  }
  const issue = bare.error.issues[0]
  const where = issue === undefined || issue.path.length === 0 ? 'the body' : issue.path.join('.')
  throw new RemoteResponseError(context, `answered with an unexpected shape (${where}: ${issue?.message ?? 'invalid'}): ${describeErrorBody(text)}`)
}

/** The most an answer of each kind may hold: what that endpoint can legitimately send, with room to spare. */
export const ANSWER_LIMITS = {
  /** A pointer, an auth message, an API key, a name, an upload's answer, an error's explanation. */
  small: 256 * 1024,
  /** The deals of one CID. */
  deals: 1024 * 1024,
  /** One page of the uploads listing, the list of names. */
  listing: 8 * 1024 * 1024,
  /** What a name resolves to through a gateway (read into memory, so held small). */
  resolved: 16 * 1024 * 1024,
  /** A gateway fetch streamed to disk, when the caller knows no size. */
  fetch: 4 * 1024 * 1024 * 1024
} as const

/** The size a response announces in `Content-Length`, when it is a number. */
export function announcedLength (headers: Record<string, string | string[] | undefined>): number | undefined {
  const value = headers['content-length']
  const text = Array.isArray(value) ? value[0] : value
  return text !== undefined && /^\d+$/.test(text.trim()) ? Number(text.trim()) : undefined
}

/** The error for an answer larger than `maxBytes`: what happened and that nothing more was read. */
export function tooLargeError (context: RemoteContext, maxBytes: number, announced?: number): RemoteResponseError {
  return new RemoteResponseError(context, announced === undefined
    ? `answered more than ${formatBytes(maxBytes)}, the most this endpoint can legitimately send: stopped reading there; the service (or a proxy in between) is misbehaving, try again later`
    : `announced ${formatBytes(announced)}, more than the ${formatBytes(maxBytes)} this endpoint can legitimately send: refused without reading it; the service (or a proxy in between) is misbehaving, try again later`)
}

/**
 * Reads a body into memory up to `maxBytes`: one announced larger is refused before a byte is read,
 * and reading stops (the connection is dropped) at the first byte past the cap, so a flood never
 * reaches memory.
 */
export async function readBounded (body: AsyncIterable<Uint8Array> & { destroy: (err?: Error) => unknown }, headers: Record<string, string | string[] | undefined>, context: RemoteContext, maxBytes: number): Promise<Buffer> {
  const announced = announcedLength(headers)
  if (announced !== undefined && announced > maxBytes) {
    body.destroy()
    throw tooLargeError(context, maxBytes, announced)
  }
  const chunks: Uint8Array[] = []
  let total = 0
  for await (const chunk of body) {
    total += chunk.byteLength
    // Leaving the loop destroys the stream: the rest is never read.
    if (total > maxBytes) throw tooLargeError(context, maxBytes)
    chunks.push(chunk)
  }
  return Buffer.concat(chunks, total)
}

/** The first `maxBytes` of a body (a refusal's explanation): the rest is never read. */
export async function readPrefix (body: AsyncIterable<Uint8Array>, maxBytes: number): Promise<string> {
  const chunks: Uint8Array[] = []
  let total = 0
  for await (const chunk of body) {
    chunks.push(chunk)
    total += chunk.byteLength
    if (total >= maxBytes) break
  }
  return Buffer.concat(chunks, total).subarray(0, maxBytes).toString('utf8')
}
