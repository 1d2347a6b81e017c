import { CidsyncError, RemoteError } from '../errors.js'
import { createServiceClients } from '../remote/index.js'
import type { Backend } from '../store/index.js'
import { boundCredential, mirrorHints } from './mirror-credentials.js'

/**
 * A service over HTTP (the upload endpoint, the gateways, the pointer, names and deals): a
 * `[[mirrors]]` table names it by its http(s) URLs, and `[service] mode = "remote"` as the
 * primary. A mirror's credentials are its own, sent only to the URLs they were saved for.
 */
export const serviceBackend: Backend = {
  kind: 'service',
  noun: 'service',
  location: { schemes: ['http', 'https'] },
  offers: { names: true, deals: true },
  failed: (err) => err instanceof RemoteError,
  advice: (err, name) => {
    const code = err instanceof CidsyncError ? err.code : ''
    if (code === 'ERR_REMOTE_UNAUTHORIZED' || code === 'ERR_MIRROR_CREDENTIAL_UNBOUND') return `sign in to the mirror: \`cidsync login --mirror ${name}\` (docs/mirrors.md)`
    if (code === 'ERR_REMOTE_NETWORK') return `the mirror does not answer: check that it runs and its URLs in [[mirrors]] ${name}; copying resumes by itself, nothing is lost meanwhile`
    return undefined
  },
  open: ({ config, mirror }) => {
    const { dealUrl, apiUrl, pointerUrl, uploadUrl, gateways } = mirror
    const credentials = config === undefined
      ? { apiKey: () => undefined, sessionToken: () => undefined }
      : { apiKey: boundCredential(config, mirror, 'api-key'), sessionToken: boundCredential(config, mirror, 'session-token') }
    // With no deal service the clients still need a base: deals are then never asked (see the replicator).
    const clients = createServiceClients({ dealUrl: dealUrl === '' ? apiUrl : dealUrl, apiUrl, pointerUrl, uploadUrl, gateways }, credentials, { hints: mirrorHints(mirror.name) })
    return { home: clients, ready: async () => {}, close: async () => { await clients.close() } }
  }
}
