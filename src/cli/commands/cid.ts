import { stat } from 'node:fs/promises'
import type { Command } from 'commander'
import { CidBuilder, cidProfile, DEFAULT_CID_PROFILE, CID_PROFILE_NAMES, CID_PROFILES, type CidProfileName } from '../../content/index.js'
import { ExitCode } from '../../errors.js'
import { action, reportError } from '../run.js'
import { safeText } from '../safe-text.js'

async function stdinCid (profileName: string): Promise<string> {
  const builder = new CidBuilder(cidProfile(profileName))
  for await (const chunk of process.stdin) builder.update(chunk as Buffer)
  return builder.finish().toString()
}

/** What each profile's CIDs are equal to. */
const MATCHES: Readonly<Record<CidProfileName, string>> = {
  'kubo-cidv1': 'ipfs add --cid-version=1',
  'unixfs-v0-2015': 'ipfs add',
  'unixfs-v1-2025': 'the 2025 UnixFS profile'
}

/** The profiles as a table, from the profiles themselves, so the help cannot say otherwise. */
function profileTable (): string {
  const rows = [['profile', 'matches', 'CID', 'chunks', 'links', 'leaves'], ...CID_PROFILE_NAMES.map(name => {
    const p = CID_PROFILES[name]
    const chunks = p.chunkSize >= 1024 * 1024 ? `${p.chunkSize / 1024 / 1024} MiB` : `${p.chunkSize / 1024} KiB`
    return [`${name}${name === DEFAULT_CID_PROFILE ? ' (default)' : ''}`, MATCHES[name], `v${p.cidVersion}`, chunks, String(p.maxLinks), p.rawLeaves ? 'raw' : 'dag-pb']
  })]
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map(row => row[i]?.length ?? 0))) ?? []
  return rows.map(row => `  ${row.map((cell, i) => cell.padEnd(widths[i] ?? 0)).join('  ').trimEnd()}`).join('\n')
}

const CID_HELP = `
Output:
Each line is the CID, two spaces and the path, as sha256sum prints them.
With --config, the config's cid_profile is used, so the CIDs are those ls shows.
A file that cannot be read is named on stderr, and the exit is 1.

Profiles:
${profileTable()}

The same bytes give the same CID only under the same profile.`

export function registerCid (program: Command): void {
  program.command('cid')
    .description('print the CID `ipfs add` gives each file, like sha256sum (- reads stdin)')
    .addHelpText('after', CID_HELP)
    .argument('<files...>', 'files to hash')
    .option('--profile <name>', `import profile: ${CID_PROFILE_NAMES.join(', ')} (default: the config's cid_profile with --config, else ${DEFAULT_CID_PROFILE})`)
    .option('--config <path>', 'take the profile from this config\'s cid_profile, so the CIDs are those `ls` and `where` show')
    .action(action(async (files: string[], options: { profile?: string, config?: string }) => {
      // A config's own profile (review: with cid_profile = "unixfs-v0-2015", `cid` printed other CIDs than `ls`).
      const fromConfig = options.profile === undefined && options.config !== undefined
        ? (await import('../../config/index.js')).loadConfig({ configPath: options.config }).cidProfile
        : undefined
      const profile = cidProfile(options.profile ?? fromConfig ?? DEFAULT_CID_PROFILE)
      const { COMMAND_INLINE_HASH_BYTES, HashPool } = await import('../../watch/index.js')
      const pool = new HashPool({ inlineBytes: COMMAND_INLINE_HASH_BYTES })
      try {
        // All files go to the pool at once; lines come out in argument order. Each promise is
        // settled into a value at once so a later failure is never an unhandled rejection.
        const sizeOf = async (file: string): Promise<number> => await stat(file).then(s => s.size, () => 0)
        const results = files.map(async file => await (file === '-' ? stdinCid(profile.name) : sizeOf(file).then(async sizeHint => (await pool.hash(file, profile.name, { sizeHint })).cid))
          .then(cid => ({ cid }), (err: unknown) => ({ err })))
        let failed = 0
        for (const [i, result] of results.entries()) {
          const outcome = await result
          if ('cid' in outcome) {
            process.stdout.write(`${outcome.cid}  ${safeText(files[i] ?? '')}\n`)
          } else {
            failed++
            reportError(outcome.err)
          }
        }
        if (failed > 0) process.exitCode = ExitCode.failure
      } finally {
        await pool.close()
      }
    }))
}
