import { describe, expect, it, onTestFinished } from 'vitest'
import { readFile } from 'node:fs/promises'
import '../../src/connect/index.js'
import { ConfigError } from '../../src/errors.js'
import { backends, mirrorBackend, pathMirror, registerBackend, unregisterBackend } from '../../src/store/index.js'
import { memoryBackend, memoryHome } from '../helpers/memory-backend.js'
import { objectStoreConformance } from './conformance.js'
import { pointerRegistryConformance } from './pointer-conformance.js'

/**
 * Where each backend cidsync ships runs both conformance suites. A backend registered without a
 * line here fails the first test: its conformance is not run.
 */
const CONFORMANCE: Record<string, string> = {
  service: 'test/remote/service-store.test.ts',
  embedded: 'test/connect/embedded-conformance.test.ts',
  directory: 'test/store/directory-pointers.test.ts test/store/directory-store.test.ts'
}

const mirror = (fields: { path?: string, url?: string, uploadUrl?: string }): ReturnType<typeof pathMirror> =>
  ({ ...pathMirror(fields.path ?? ''), name: 'm', uploadUrl: fields.uploadUrl ?? '', ...(fields.url === undefined ? {} : { url: fields.url }) })

describe('the backends registry', () => {
  it('holds the backends cidsync ships, and each runs both conformance suites', async () => {
    expect(backends().map(b => b.kind)).toEqual(['service', 'embedded', 'directory'])
    for (const backend of backends()) {
      const files = CONFORMANCE[backend.kind]
      expect(files, `${backend.kind} has no conformance run`).toBeDefined()
      const text = (await Promise.all((files ?? '').split(' ').map(async f => await readFile(f, 'utf8')))).join('\n')
      expect(text, backend.kind).toContain('objectStoreConformance(')
      expect(text, backend.kind).toContain('pointerRegistryConformance(')
    }
  })

  it('finds a mirror\'s backend by its path or its URL\'s scheme; a scheme none reads is a config error', () => {
    expect(mirrorBackend(mirror({ path: '/mnt/usb' })).kind).toBe('directory')
    expect(mirrorBackend(mirror({ uploadUrl: 'https://u.example' })).kind).toBe('service')
    expect(mirrorBackend(mirror({ uploadUrl: 'http://127.0.0.1:1' })).kind).toBe('service')
    expect(() => mirrorBackend(mirror({ url: 'memory://x' }))).toThrow(ConfigError)
    expect(() => mirrorBackend(mirror({ url: 'memory://x' }))).toThrow(/no backend reads "memory:\/\/x".*a path, or a URL of scheme http:, https:$/)
    registerBackend(memoryBackend)
    onTestFinished(() => { unregisterBackend('memory') })
    expect(mirrorBackend(mirror({ url: 'memory://x' })).kind).toBe('memory')
  })

  it('refuses a kind, a scheme or the path registered twice', () => {
    expect(() => { registerBackend({ ...memoryBackend, kind: 'service' }) }).toThrow(/registered already/)
    expect(() => { registerBackend({ ...memoryBackend, location: { schemes: ['https'] } }) }).toThrow(/both read https: URLs/)
    expect(() => { registerBackend({ ...memoryBackend, location: { path: true } }) }).toThrow(/both read a path/)
    expect(backends().map(b => b.kind)).not.toContain('memory')
  })
})

// A backend defined in a test alone passes the same suites as those cidsync ships.
objectStoreConformance('a memory store (a test\'s backend)', async () => {
  const home = memoryHome()
  return {
    store: home.objects,
    damage: async (cid) => {
      const bytes = home.objects.objects.get(cid)?.bytes
      if (bytes !== undefined) bytes[bytes.byteLength >> 1] = (bytes[bytes.byteLength >> 1] as number) ^ 1
    }
  }
})
pointerRegistryConformance('a memory store (a test\'s backend)', async () => ({ pointers: memoryHome().pointers }))
