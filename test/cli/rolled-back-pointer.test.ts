import { describe, expect, it } from 'vitest'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { EXTERNAL } from '../helpers/service.js'
import { runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { embeddedDeviceConfig, publishTwiceThenRollBack } from '../helpers/rolled-back.js'

describe.skipIf(EXTERNAL)('a pointer set back behind this device\'s own publish', () => {
  it('export (at the pointer or --at) and restore --at refuse it (exit 4, ERR_POINTER_ROLLED_BACK, no FILE), as get --at and find --at do; a time before it still answers', async () => {
    const root = await useTempDir()
    const a = await embeddedDeviceConfig(root, 'a')
    const { first, between } = await publishTwiceThenRollBack(root, a)

    const now = new Date().toISOString()
    const runs: Array<[string[], string | undefined]> = [
      [['export', '--car', join(root, 'latest.car')], join(root, 'latest.car')],
      [['export', '--car', join(root, 'at.car'), '--at', now], join(root, 'at.car')],
      [['restore', '--at', now, '--dry-run'], undefined]
    ]
    for (const [args, file] of runs) {
      const refused = await runCli([...args, '--config', a], { timeoutMs: 60_000 })
      expect(refused.code, `${args.join(' ')}: ${refused.stderr}`).toBe(4)
      expect(refused.stderr).toContain('ERR_POINTER_ROLLED_BACK')
      if (file !== undefined) expect(existsSync(file), `${file} after a refused export`).toBe(false)
    }
    const before = await runCli(['export', '--car', join(root, 'before.car'), '--at', between, '--config', a], { timeoutMs: 60_000 })
    expect(before.code, before.stderr).toBe(0)
    expect(before.stdout).toContain(`exported ${first}`)
    const restoreBefore = await runCli(['restore', '--at', between, '--dry-run', '--config', a], { timeoutMs: 60_000 })
    expect(restoreBefore.code, restoreBefore.stderr).toBe(0)
    expect(restoreBefore.stdout).toContain(`would install ${first}`)
  }, 240_000)
})
