import type { Command } from 'commander'
import { GenerateWriteError, UsageError } from '../../errors.js'
import { writeFileAtomicSync } from '../../util/atomic-write.js'
import { makeDirsSync } from '../../util/make-dirs.js'
import { join } from 'node:path'
import { action } from '../run.js'
import { safeText } from '../safe-text.js'

interface GenerateOptions { manDir?: string, bashCompletion?: string, zshCompletion?: string, fishCompletion?: string, markdownDir?: string }

const GENERATE_HELP = `
How it writes:
Each file is written whole or not at all, 0644, over any file already there (as restic's generate does).
A directory is made when it is missing.
A completion FILE of \`-\` goes to standard output.
Nothing given is a usage error (exit 2).
A file that cannot be written is ERR_GENERATE_WRITE (exit 1).

Examples:
  cidsync generate --man-dir ~/.local/share/man/man1
  cidsync generate --bash-completion ~/.local/share/bash-completion/completions/cidsync
  cidsync generate --zsh-completion ~/.zfunc/_cidsync
  cidsync generate --fish-completion ~/.config/fish/completions/cidsync.fish
  npm run docs:reference   # docs/reference/, from a clone (generate --markdown-dir)`

/** Writes `files` (name to text) under `dir`; the count written. */
function writeAll (dir: string, files: ReadonlyMap<string, string>): number {
  for (const [name, text] of files) write(join(dir, name), text)
  return files.size
}

function write (path: string, text: string): void {
  if (path === '-') { process.stdout.write(text); return }
  try {
    writeFileAtomicSync(path, text, { mode: 0o644 })
  } catch (err) {
    throw new GenerateWriteError(path, err)
  }
}

function makeDir (dir: string): void {
  try {
    makeDirsSync(dir)
  } catch (err) {
    throw new GenerateWriteError(dir, err)
  }
}

export function registerGenerate (program: Command): void {
  program.command('generate')
    .description('write the man pages, the shell completions (bash, zsh, fish) or the Markdown reference, all from this help')
    .option('--man-dir <dir>', 'write a man page per command into DIR (cidsync.1, cidsync-restore.1, ...)')
    .option('--bash-completion <file>', 'write the bash completion script to FILE')
    .option('--zsh-completion <file>', 'write the zsh completion script to FILE (name it _cidsync in $fpath)')
    .option('--fish-completion <file>', 'write the fish completion script to FILE')
    .option('--markdown-dir <dir>', 'write a Markdown page per command into DIR, and an index (README.md)')
    .addHelpText('after', GENERATE_HELP)
    .action(action(async (options: GenerateOptions, command: Command) => {
      const outputs = [options.manDir, options.bashCompletion, options.zshCompletion, options.fishCompletion, options.markdownDir]
      if (outputs.every(output => output === undefined)) throw new UsageError('nothing to write: give --man-dir DIR, --bash-completion FILE, --zsh-completion FILE, --fish-completion FILE or --markdown-dir DIR')
      if (outputs.filter(output => output === '-').length > 1) throw new UsageError('only one script can go to standard output (-) at a time')
      if (options.manDir === '-' || options.markdownDir === '-') throw new UsageError('--man-dir and --markdown-dir take a directory, not -')
      // program.ts loads every command for this one: the parent is the whole program.
      const root = command.parent ?? command
      const generate = await import('../generate/index.js')
      const model = generate.commandModel(root)
      const table = generate.completionTable(model)
      const said = (line: string): boolean => process.stderr.write(`${safeText(line)}\n`)
      if (options.manDir !== undefined) {
        makeDir(options.manDir)
        said(`wrote ${writeAll(options.manDir, generate.manPages(model, root.version() ?? ''))} man pages to ${options.manDir}`)
      }
      if (options.markdownDir !== undefined) {
        makeDir(options.markdownDir)
        said(`wrote ${writeAll(options.markdownDir, generate.markdownPages(model))} reference pages to ${options.markdownDir}`)
      }
      const scripts = [
        [options.bashCompletion, 'bash', generate.bashCompletion],
        [options.zshCompletion, 'zsh', generate.zshCompletion],
        [options.fishCompletion, 'fish', generate.fishCompletion]
      ] as const
      for (const [file, shell, script] of scripts) {
        if (file === undefined) continue
        write(file, script(table))
        if (file !== '-') said(`wrote the ${shell} completion to ${file}`)
      }
    }))
}
