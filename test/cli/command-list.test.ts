import { readdir, readFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { Command, Help } from 'commander'
import { describe, expect, it } from 'vitest'
import { COMMAND_GROUPS } from '../../src/cli/command-list.js'
import { createProgram } from '../../src/cli/program.js'
import { runCli, UNBUNDLED_CLI } from '../helpers/cli.js'

const COMMANDS = fileURLToPath(new URL('../../src/cli/commands/', import.meta.url))

describe('the command list (commands loaded only when run)', () => {
  it('lists each command as its own module registers it: name, term, description', async () => {
    const help = new Help()
    for (const [, entries] of COMMAND_GROUPS) {
      for (const entry of entries) {
        const program = new Command('cidsync')
        ;(await entry.load())(program)
        expect(program.commands.map(c => c.name()), entry.name).toEqual([entry.name])
        const command = program.commands[0] as Command
        expect({ term: help.subcommandTerm(command), description: help.subcommandDescription(command) }, entry.name)
          .toEqual({ term: entry.term, description: entry.description })
      }
    }
  })

  it('holds every command module there is (a new one not listed would be missing from the CLI)', async () => {
    const listed = COMMAND_GROUPS.flatMap(([, entries]) => entries.map(e => e.name)).sort()
    const registering: string[] = []
    for (const file of await readdir(COMMANDS)) {
      if (/export function register[A-Z]/.test(await readFile(`${COMMANDS}${file}`, 'utf8'))) registering.push(file.replace(/\.ts$/, ''))
    }
    expect(listed).toEqual(registering.sort())
  })

  it('`help <command>` and `<command> --help` show that command\'s own options; `--version` loads no command', async () => {
    for (const args of [['help', 'restore'], ['restore', '--help']]) {
      const shown = await runCli(args)
      expect(shown.code, args.join(' ')).toBe(0)
      expect(shown.stdout).toContain('Usage: cidsync restore [options]')
      expect(shown.stdout).toContain('--as-device <id>')
    }
    // A hook that names every module of the CLI's commands as it is loaded (tsc's build: the
    // bundle's chunks do not name their modules).
    const hook = `data:text/javascript,${encodeURIComponent(`import { register } from 'node:module'
register('data:text/javascript,' + encodeURIComponent("export async function load (url, context, next) { if (url.includes('/cli/commands/')) process.stderr.write('loaded ' + url + '\\\\n'); return next(url, context) }"))`)}`
    const version = await runCli(['--version'], { script: UNBUNDLED_CLI, env: { ...process.env, NODE_OPTIONS: `--import=${hook}` } })
    expect(version.code).toBe(0)
    expect(version.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/)
    expect(version.stderr).not.toContain('loaded ')
    const status = await runCli(['status', '--help'], { script: UNBUNDLED_CLI, env: { ...process.env, NODE_OPTIONS: `--import=${hook}` } })
    expect(status.stderr.match(/^loaded .*$/gm)?.map(line => line.replace(/.*\/cli\/commands\//, ''))).toEqual(['status.js'])
  })

  it('a command line dispatched to a command not loaded loads it and is parsed again by it (its own options, its own help)', async () => {
    // '' loads no command: every one is listed only, as for a command line read otherwise.
    const unknown = ['node', 'cidsync', 'cid', '--no-such-option']
    await expect((await createProgram(unknown, '')).parseAsync(unknown)).rejects.toMatchObject({ code: 'commander.unknownOption' })
    const quiet = { writeOut: () => {}, writeErr: () => {} }
    const help = ['node', 'cidsync', 'restore', '--help']
    const program = await createProgram(help, '')
    program.configureOutput(quiet)
    await expect(program.parseAsync(help)).rejects.toMatchObject({ code: 'commander.helpDisplayed' })
  })
})
