import { readFileSync, statSync } from 'node:fs'

function userName (uid: number): string | undefined {
  try {
    return readFileSync('/etc/passwd', 'utf8').split('\n').map(l => l.split(':')).find(f => f[2] === String(uid))?.[0]
  } catch {
    return undefined
  }
}

/**
 * Why this process must not use `stateDir`, or undefined when it may: a state dir that belongs to
 * another user (the system service's, typically) is that user's index, key and account. Reading it
 * as someone else fails, and writing it as root leaves files the daemon cannot open, so the
 * command is refused with the way to run it as that user.
 */
export function stateDirOwnerProblem (stateDir: string, uid = process.getuid?.()): string | undefined {
  if (uid === undefined) return undefined
  let owner: number
  try {
    owner = statSync(stateDir).uid
  } catch {
    return undefined // not made yet: whoever runs first makes it
  }
  if (owner === uid) return undefined
  const name = userName(owner)
  const as = name === undefined ? `the user with uid ${owner}` : `user ${name}`
  return `the state dir ${stateDir} belongs to ${as}, not to you (uid ${uid}): it holds that user's index, key and account. ` +
    `Run the command as its owner: \`sudo -u ${name ?? `'#${owner}'`} cidsync ...\``
}
