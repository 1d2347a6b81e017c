import type { Backend } from '../store/index.js'

/**
 * The embedded service: the local service started in this process, its packs read here
 * (connect/embedded.ts). It is the primary's only (`[service] mode = "embedded"`, the default):
 * no `[[mirrors]]` table names it. Its failures are the service's, read through its HTTP clients.
 */
export const embeddedBackend: Backend = {
  kind: 'embedded',
  noun: 'embedded service',
  offers: { names: true, deals: true },
  failed: () => false,
  advice: () => undefined
}
