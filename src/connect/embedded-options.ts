import { z } from 'zod'
import { ConfigError } from '../errors.js'

/** The embedded service's session token lives this long, and is renewed at half its life. */
export const DEFAULT_EMBEDDED_TOKEN_TTL_SECONDS = 7 * 86_400

export interface EmbeddedOptions {
  /** Serve the local service's admin routes (`/local/...`, behind the admin token in its dir). */
  readonly admin: boolean
  readonly tokenTtlSeconds: number
}

const flag = z.enum(['1', 'true', 'yes', 'on', '0', 'false', 'no', 'off', '']).transform(v => ['1', 'true', 'yes', 'on'].includes(v))

/**
 * Two knobs for operators and tests, read once from the environment:
 * `CIDSYNC_EMBEDDED_ADMIN=1` serves the admin routes (for fault injection in tests, or debugging),
 * `CIDSYNC_EMBEDDED_TOKEN_TTL_SECONDS` shortens the session token's life (tests of renewal).
 */
export function embeddedOptions (env: NodeJS.ProcessEnv): EmbeddedOptions {
  const admin = flag.safeParse((env.CIDSYNC_EMBEDDED_ADMIN ?? '').trim().toLowerCase())
  if (!admin.success) throw new ConfigError(`CIDSYNC_EMBEDDED_ADMIN = ${JSON.stringify(env.CIDSYNC_EMBEDDED_ADMIN)}: expected 1 or 0`)
  const rawTtl = (env.CIDSYNC_EMBEDDED_TOKEN_TTL_SECONDS ?? '').trim()
  const ttl = z.coerce.number().int().min(2).max(366 * 86_400).safeParse(rawTtl === '' ? DEFAULT_EMBEDDED_TOKEN_TTL_SECONDS : rawTtl)
  if (!ttl.success) throw new ConfigError(`CIDSYNC_EMBEDDED_TOKEN_TTL_SECONDS = ${JSON.stringify(rawTtl)}: expected whole seconds from 2 to ${366 * 86_400}`)
  return { admin: admin.data, tokenTtlSeconds: ttl.data }
}
