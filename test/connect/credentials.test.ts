import { describe, it, expect } from 'vitest'
import { chmod, mkdir, writeFile, stat, utimes } from 'node:fs/promises'
import { join } from 'node:path'
import { Credential } from '../../src/connect/index.js'
import { ConfigError } from '../../src/errors.js'
import { useTempDir } from '../helpers/temp-dir.js'

describe('credentials', () => {
  it('come from the environment first, then systemd\'s credentials dir, then the config dir', async () => {
    const dir = await useTempDir()
    const systemd = join(dir, 'creds')
    await mkdir(systemd)
    const saved = new Credential('api-key', dir, {})
    expect(saved.value()).toBeUndefined()
    saved.save('from-file')
    expect((await stat(join(dir, 'api-key'))).mode & 0o777).toBe(0o600)
    expect(new Credential('api-key', dir, {}).value()).toBe('from-file')
    await writeFile(join(systemd, 'api-key'), 'from-systemd\n')
    expect(new Credential('api-key', dir, { CREDENTIALS_DIRECTORY: systemd }).value()).toBe('from-systemd')
    expect(new Credential('api-key', dir, { CREDENTIALS_DIRECTORY: systemd, CIDSYNC_API_KEY: 'from-env' }).value()).toBe('from-env')
    expect(new Credential('session-token', dir, { CIDSYNC_SESSION_TOKEN: 'token' }).value()).toBe('token')
  })

  it('reads a file again when it changes, so a renewed token applies at once, even within one tick of the file system\'s clock', async () => {
    const dir = await useTempDir()
    const token = new Credential('session-token', dir, {})
    // Both saved within one tick of a coarse clock: the same mtime, without waiting for a tick.
    const tick = new Date('2026-01-01T08:00:00Z')
    token.save('first')
    await utimes(token.path, tick, tick)
    expect(token.value()).toBe('first')
    new Credential('session-token', dir, {}).save('second')
    await utimes(token.path, tick, tick)
    expect(token.value()).toBe('second')
  })

  it('refuses a saved credential others can read', async () => {
    const dir = await useTempDir()
    await writeFile(join(dir, 'api-key'), 'key')
    await chmod(join(dir, 'api-key'), 0o644)
    expect(() => new Credential('api-key', dir, {}).value()).toThrow(ConfigError)
    expect(() => new Credential('api-key', dir, {}).value()).toThrow(/chmod 600/)
  })
})
