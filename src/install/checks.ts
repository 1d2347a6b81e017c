import { readFileSync, realpathSync, statSync } from 'node:fs'
import { dirname, resolve } from 'node:path'

/** A user as `/etc/passwd` has it; an absent one (not created yet) is nobody's owner or member. */
export interface ServiceAccount {
  readonly name: string
  readonly uid: number | undefined
  readonly gid: number | undefined
}

/** The account of `name` from a passwd file, or one with no ids when it does not exist yet. */
export function lookUpAccount (name: string, passwd = '/etc/passwd'): ServiceAccount {
  let text = ''
  try {
    text = readFileSync(passwd, 'utf8')
  } catch {}
  const fields = text.split('\n').map(line => line.split(':')).find(f => f[0] === name)
  if (fields === undefined) return { name, uid: undefined, gid: undefined }
  return { name, uid: Number(fields[2]), gid: Number(fields[3]) }
}

const READ = 4
const EXECUTE = 1

/** The permission bits (r=4, w=2, x=1) `account` gets on a file of this mode and owner. */
function bitsFor (account: ServiceAccount, mode: number, uid: number, gid: number): number {
  if (account.uid === 0) return 7
  if (account.uid === uid) return (mode >> 6) & 7
  if (account.gid === gid) return (mode >> 3) & 7
  return mode & 7
}

/**
 * Why `account` cannot use `path` (read it, and run it with `execute`), or undefined when it can:
 * every directory above it must be searchable and the file itself readable. Supplementary groups
 * are not looked at, so a group granted that way is reported too: the message says which path to
 * check.
 */
export function accessProblem (account: ServiceAccount, path: string, execute = false): string | undefined {
  let target: string
  try {
    target = realpathSync(path)
  } catch (err) {
    return `${path} cannot be read (${(err as NodeJS.ErrnoException).code ?? String(err)})`
  }
  const chain: string[] = []
  for (let dir = dirname(target); ; dir = dirname(dir)) {
    chain.unshift(dir)
    if (dirname(dir) === dir) break
  }
  for (const dir of chain) {
    const s = statSync(dir)
    if ((bitsFor(account, s.mode, s.uid, s.gid) & EXECUTE) === 0) {
      return `the service user ${account.name} cannot enter ${dir} (mode ${(s.mode & 0o777).toString(8)}), so it cannot reach ${resolve(path)}`
    }
  }
  const s = statSync(target)
  const need = READ | (execute ? EXECUTE : 0)
  if ((bitsFor(account, s.mode, s.uid, s.gid) & need) !== need) {
    return `the service user ${account.name} cannot ${execute ? 'run' : 'read'} ${resolve(path)} (mode ${(s.mode & 0o777).toString(8)})`
  }
  return undefined
}

export interface InstallCheckInput {
  readonly node: string
  readonly cli: string
  readonly config: string
  readonly folders: readonly string[]
  readonly account: ServiceAccount
}

/**
 * What stops a system service from running (problems: the service user cannot run node or cidsync,
 * or read the config) and what will surprise (warnings: a folder under /tmp, which the unit's
 * PrivateTmp= hides from the daemon).
 */
export function checkSystemInstall (input: InstallCheckInput): { problems: string[], warnings: string[] } {
  const problems: string[] = []
  const node = accessProblem(input.account, input.node, true)
  if (node !== undefined) problems.push(`${node}: install Node.js where every user can run it (e.g. /usr/bin/node from your distribution or NodeSource)`)
  const cli = accessProblem(input.account, input.cli)
  if (cli !== undefined) problems.push(`${cli}: install cidsync where every user can read it (\`sudo npm install -g cidsync\`, or from a checkout outside a private home)`)
  const config = accessProblem(input.account, input.config)
  if (config !== undefined) problems.push(`${config}: run \`sudo chgrp ${input.account.name} '${input.config}' && sudo chmod 0640 '${input.config}'\` (once the user exists), or move it to /etc/cidsync/config.toml`)
  const warnings = input.folders
    .filter(folder => folder === '/tmp' || folder.startsWith('/tmp/') || folder === '/var/tmp' || folder.startsWith('/var/tmp/'))
    .map(folder => `folder ${folder} is under a temporary directory, which the unit's PrivateTmp=yes hides from the daemon: it will be shown as missing; watch a folder elsewhere`)
  return { problems, warnings }
}
