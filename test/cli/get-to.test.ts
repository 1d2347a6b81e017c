import { describe, expect, it } from 'vitest'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'

describe('get and restore --files with a --to that is no directory', () => {
  it('refuse --to - and an empty --to (exit 2, nothing made), where a directory named - was made and "" meant the folders themselves', async () => {
    const dir = await useTempDir()
    const config = join(dir, 'absent.toml')
    for (const args of [['get', 'notes/a.txt', '--to', '-'], ['get', 'notes/a.txt', '--to', ''], ['restore', '--files', '--to', '-'], ['restore', '--files', '--to', '']]) {
      const run = await runCli([...args, '--config', config], { cwd: dir })
      expect(run.code, args.join(' ')).toBe(2)
      expect(run.stderr, args.join(' ')).toMatch(/--to (needs a directory|-: files are written into a directory)/)
    }
  })

  it('refuse a --to that is a file (exit 2, coded, the file untouched), where mkdir\'s bare ENOTDIR came out uncoded', async () => {
    const dir = await useTempDir()
    const file = join(dir, 'somefile')
    writeFileSync(file, 'mine')
    for (const [args, says] of [[['get', 'notes/a.txt', '--to', file], `--to ${file} is not a directory`], [['restore', '--files', '--to', file], `--to ${file} is not a directory`], [['get', 'notes/a.txt', '--to', join(file, 'sub')], 'a part of that path is a file']] as const) {
      const run = await runCli([...args, '--config', join(dir, 'absent.toml')], { cwd: dir })
      expect(run.code, args.join(' ')).toBe(2)
      expect(run.stderr, args.join(' ')).toContain(says)
      expect(run.stderr, args.join(' ')).toContain('ERR_USAGE')
    }
    expect(readFileSync(file, 'utf8')).toBe('mine')
  })
})
