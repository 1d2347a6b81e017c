import { describe, expect, it } from 'vitest'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { loadConfig } from '../../src/config/index.js'
import { offlineState } from '../../src/cli/status-offline.js'
import { SyncStore } from '../../src/sync/index.js'
import { useTempDir } from '../helpers/temp-dir.js'

describe('status with no daemon', () => {
  it('names a directory mirror by its path, as a running daemon does', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'usb'))
    const path = join(dir, 'c.toml')
    await writeFile(path, 'state_dir = "state"\n[[mirrors]]\nname = "usb"\npath = "usb/store"\n')
    const config = loadConfig({ configPath: path, env: {} })
    await mkdir(config.stateDir, { recursive: true, mode: 0o700 })
    new SyncStore(config.stateDir).close()

    const state = await offlineState(config, 'no daemon answers')
    expect(state.mirrors.map(m => m.endpoint)).toEqual([`mirror usb at ${join(dir, 'usb', 'store')}`])
  })
})
