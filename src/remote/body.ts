import type { z } from 'zod'
import { RemoteResponseError, type RemoteContext } from '../errors.js'

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
