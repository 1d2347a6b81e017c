import { describe, expect, it } from 'vitest'
import { existsSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'

describe.runIf(existsSync('/proc/self'))('a state dir that cannot be made', () => {
  it('under /proc: commands fail at once, naming it (they hung: Node\'s recursive mkdir loops there)', async () => {
    const dir = await useTempDir()
    const config = join(dir, 'c.toml')
    await writeFile(config, 'state_dir = "/proc/cidsync-not-here/state"\n')
    for (const args of [['snapshot'], ['key', 'export'], ['verify']]) {
      const result = await runCli([...args, '--config', config], { timeoutMs: 60_000 })
      expect(result.signal, args.join(' ')).toBeNull()
      expect(result.code, args.join(' ')).toBe(1)
      expect(result.stderr).toContain("mkdir '/proc/cidsync-not-here'")
    }
  })
})
