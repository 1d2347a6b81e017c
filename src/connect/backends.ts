/**
 * The backends cidsync ships: one line each. A new backend is one file implementing
 * `ObjectStore` and `PointerRegistry` with its `Backend` (store/backends.ts), and one line here.
 * Both conformance suites then run it (test/store/backends.test.ts fails until they do).
 */
import { directoryBackend, registerBackend } from '../store/index.js'
import { embeddedBackend } from './embedded-backend.js'
import { serviceBackend } from './service-backend.js'

registerBackend(serviceBackend)
registerBackend(embeddedBackend)
registerBackend(directoryBackend)
