import { execFileSync, spawnSync } from 'node:child_process'
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { COMMAND_GROUPS } from '../../src/cli/command-list.js'
import { runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'

const REFERENCE = fileURLToPath(new URL('../../docs/reference/', import.meta.url))
const has = (tool: string): boolean => spawnSync('sh', ['-c', `command -v ${tool}`]).status === 0
const TOP_LEVEL = COMMAND_GROUPS.flatMap(([, entries]) => entries.map(entry => entry.name))

/** The roff requests the man pages may use; anything else is a line roff would not read as text. */
const REQUESTS = new Set(['.TH', '.SH', '.SS', '.PP', '.TP', '.IP', '.RS', '.RE', '.nf', '.fi', '.br', '.ad', '.nh'])
/** The escapes they may hold. */
const ESCAPES = /\\(?:e|-|&|fB|fI|fR|fP|\(bu)/g

let out: string
beforeAll(async () => {
  out = await mkdtemp(join(tmpdir(), 'cidsync-generate-'))
  const made = await runCli(['generate', '--man-dir', join(out, 'man'), '--markdown-dir', join(out, 'reference'),
    '--bash-completion', join(out, 'cidsync.bash'), '--zsh-completion', join(out, '_cidsync'), '--fish-completion', join(out, 'cidsync.fish')])
  expect(made.code, made.stderr).toBe(0)
})
afterAll(async () => { await rm(out, { recursive: true, force: true }) })

describe('cidsync generate', () => {
  it('writes a man page for the program and for every command and subcommand, each of which parses as roff', async () => {
    const pages = (await readdir(join(out, 'man'))).sort()
    for (const name of ['cidsync', ...TOP_LEVEL]) expect(pages).toContain(name === 'cidsync' ? 'cidsync.1' : `cidsync-${name}.1`)
    expect(pages).toContain('cidsync-key-export.1')
    expect(pages).toContain('cidsync-local-service-token.1')
    for (const page of pages) {
      const text = await readFile(join(out, 'man', page), 'utf8')
      const lines = text.split('\n').slice(0, -1)
      expect(lines[0], page).toMatch(/^\.TH "CIDSYNC[A-Z\\-]*" "1" /)
      expect(lines.filter(line => line.startsWith('.SH')).slice(0, 3), page).toEqual(['.SH NAME', '.SH SYNOPSIS', '.SH DESCRIPTION'])
      for (const line of lines) {
        if (line.startsWith('.')) expect(REQUESTS.has(line.split(' ')[0] as string), `${page}: ${line}`).toBe(true)
        expect(line.startsWith("'"), `${page}: ${line}`).toBe(false)
        // Every backslash starts an escape roff knows: none is left to mean something else.
        expect(line.replace(ESCAPES, '').includes('\\'), `${page}: ${line}`).toBe(false)
      }
    }
  })

  it.skipIf(!has('man'))('man pages render with man -l, without a warning, as --help says', async () => {
    const restore = spawnSync('man', ['--warnings', '-l', join(out, 'man', 'cidsync-restore.1')], { encoding: 'utf8', env: { ...process.env, MANWIDTH: '100', MAN_KEEP_FORMATTING: '', PAGER: 'cat' } })
    expect(restore.status, restore.stderr).toBe(0)
    expect(restore.stderr).toBe('')
    // Justified: the words of a line are spread out.
    const shown = restore.stdout.replace(/\s+/g, ' ')
    expect(shown).toContain('NAME cidsync-restore - install the index from the pointer')
    expect(shown).toContain('--allow-older install a mirror\'s publish even when it is older')
    for (const page of await readdir(join(out, 'man'))) {
      const shown = spawnSync('man', ['--warnings', '-l', join(out, 'man', page)], { encoding: 'utf8', env: { ...process.env, PAGER: 'cat' } })
      expect({ page, status: shown.status, stderr: shown.stderr }).toEqual({ page, status: 0, stderr: '' })
    }
  })

  it('bash completes a command name, a subcommand, a command for help, and an option', () => {
    const script = `source '${join(out, 'cidsync.bash')}'
complete -p cidsync
words () { COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _cidsync; echo "$*|\${COMPREPLY[*]}"; }
words cidsync res
words cidsync key ''
words cidsync help ver
words cidsync restore --allow
words cidsync --config c.toml restore --at 3d --fi
words cidsync restore --at ''
words cidsync ''`
    const lines = execFileSync('bash', ['--norc', '--noprofile', '-c', script], { encoding: 'utf8' }).split('\n')
    expect(lines.slice(0, 7)).toEqual([
      'complete -o default -F _cidsync cidsync',
      'cidsync res|rescan restore',
      'cidsync key |export import help',
      'cidsync help ver|verify',
      'cidsync restore --allow|--allow-unencrypted --allow-older',
      'cidsync --config c.toml restore --at 3d --fi|--files',
      // An option's value: nothing offered, so bash completes a file name (-o default).
      'cidsync restore --at |'
    ])
    expect(lines[7]?.split('|')[1]?.split(' ')).toEqual([...TOP_LEVEL, 'help'])
  })

  it.skipIf(!has('zsh'))('zsh completes a command name, a subcommand and an option, each with its description', () => {
    const script = `compdef () { echo "compdef $*"; }
_files () { echo FILES; }
_describe () { print -l -- "\${(@P)4}"; }
source '${join(out, '_cidsync')}'
words=(cidsync key ''); CURRENT=3; _cidsync
words=(cidsync restore --al); CURRENT=3; _cidsync | grep -- --allow-older
words=(cidsync restore --to ''); CURRENT=4; _cidsync`
    const shown = execFileSync('zsh', ['-f', '-c', script], { encoding: 'utf8' })
    expect(shown).toBe(`compdef _cidsync cidsync
export:print this device's snapshot key (made now if there is none yet)
import:install a key exported on another device, so its snapshots open here
help:show help for a command
--allow-older:install a mirror's publish even when it is older than this device's last...
FILES
`)
    expect(spawnSync('zsh', ['-n', join(out, '_cidsync')]).status).toBe(0)
  })

  it.skipIf(!has('fish'))('fish completes a command name and an option, each with its description', () => {
    const complete = (line: string): string => execFileSync('fish', ['--no-config', '-c', `source '${join(out, 'cidsync.fish')}'; complete -C '${line}'`], { encoding: 'utf8' })
    expect(complete('cidsync res')).toBe('rescan\task the running daemon to walk every folder afresh now and repair what the...\nrestore\tinstall the index from the pointer (or a given CID)\n')
    expect(complete('cidsync local-service token --us')).toBe('--user\tthe user the token names (sub)\n')
    expect(complete('cidsync --config c.toml key i')).toBe('import\tinstall a key exported on another device, so its snapshots open here\n')
  })

  it('writes each file 0644 and over one already there (as restic does), a script to standard output for -, and refuses nothing to do', async () => {
    const dir = await useTempDir()
    const file = join(dir, 'cidsync.bash')
    await writeFile(file, 'old\n', { mode: 0o600 })
    const again = await runCli(['generate', '--bash-completion', file])
    expect(again.code, again.stderr).toBe(0)
    expect(again.stderr).toBe(`wrote the bash completion to ${file}\n`)
    expect(await readFile(file, 'utf8')).toBe(await readFile(join(out, 'cidsync.bash'), 'utf8'))
    expect((await stat(file)).mode & 0o777).toBe(0o644 & ~process.umask())
    const stdout = await runCli(['generate', '--fish-completion', '-'])
    expect(stdout.code).toBe(0)
    expect(stdout.stdout).toBe(await readFile(join(out, 'cidsync.fish'), 'utf8'))
    expect(stdout.stderr).toBe('')
    const nothing = await runCli(['generate'])
    expect(nothing.code).toBe(2)
    expect(nothing.stderr).toContain('nothing to write: give --man-dir DIR')
    const unwritable = await runCli(['generate', '--zsh-completion', join(file, 'under-a-file')])
    expect(unwritable.code).toBe(1)
    expect(unwritable.stderr).toMatch(/could not write .*under-a-file.* \[ERR_GENERATE_WRITE\]/)
  })
})

describe('docs/reference', () => {
  it('holds exactly the pages the program generates from its help (run `npm run docs:reference` after changing a command)', async () => {
    const made = (await readdir(join(out, 'reference'))).sort()
    const committed = (await readdir(REFERENCE)).sort()
    expect(committed, 'run `npm run docs:reference`').toEqual(made)
    for (const page of made) {
      expect(await readFile(join(REFERENCE, page), 'utf8'), `docs/reference/${page} differs from the help: run \`npm run docs:reference\``)
        .toBe(await readFile(join(out, 'reference', page), 'utf8'))
    }
    expect(made).toEqual(['README.md', ...TOP_LEVEL.map(name => `${name}.md`)].sort())
  })
})
