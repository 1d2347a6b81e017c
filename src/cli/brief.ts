/** The first arguments that only print the version or the help: they compile and open next to nothing. */
export const BRIEF = new Set([undefined, '--version', '-V', '--help', '-h', 'help'])

/** Whether the command line only prints the version or a help, its first argument or a command's `--help`. */
export function printsOnly (argv: readonly string[]): boolean {
  return BRIEF.has(argv[2]) || argv.includes('--help') || argv.includes('-h')
}
