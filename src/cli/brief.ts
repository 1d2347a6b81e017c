/** The first arguments that only print the version or the help: they compile and open next to nothing. */
export const BRIEF = new Set([undefined, '--version', '-V', '--help', '-h', 'help'])
