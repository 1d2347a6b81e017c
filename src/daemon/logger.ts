import pino, { type Logger, type LevelWithSilent } from 'pino'
import { createRequire } from 'node:module'

export type { Logger } from 'pino'

/** Fields that may carry secrets; pino replaces them before a line is written. */
export const REDACTED_PATHS = [
  'apiKey', '*.apiKey', 'token', '*.token', 'sessionToken', '*.sessionToken', 'walletKey', '*.walletKey',
  'key', '*.key', 'passphrase', '*.passphrase', 'headers.authorization', '*.headers.authorization'
]

export interface LoggerInit {
  readonly level: LevelWithSilent
  /** Human-readable lines; by default when stderr is a terminal. */
  readonly pretty?: boolean
  /** Called with each error-level line, for the status document's recent errors. */
  readonly onError?: (message: string, fields: Record<string, unknown>) => void
}

/**
 * One event a line on stderr (stdout stays for command output): JSON for journald and tooling,
 * readable on a terminal. Secrets are redacted.
 */
export function createLogger (init: LoggerInit): Logger {
  const options: pino.LoggerOptions = {
    level: init.level,
    base: { pid: process.pid },
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    hooks: {
      logMethod (args, method, level) {
        if (level >= 50 && init.onError !== undefined) {
          const [first, second] = args as unknown[]
          const fields = typeof first === 'object' && first !== null ? first as Record<string, unknown> : {}
          const message = typeof first === 'string' ? first : typeof second === 'string' ? second : ''
          init.onError(message, fields)
        }
        method.apply(this, args)
      }
    }
  }
  const usePretty = init.pretty ?? process.stderr.isTTY === true
  // pino-pretty is slow to load, and only a terminal needs it.
  const destination = usePretty
    ? (createRequire(import.meta.url)('pino-pretty') as typeof import('pino-pretty'))({ destination: 2, sync: true, colorize: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' })
    : pino.destination({ dest: 2, sync: true })
  return pino(options, destination)
}
