import { stat } from 'node:fs/promises'
import type { Command } from 'commander'
import { CidBuilder, cidProfile, DEFAULT_CID_PROFILE, CID_PROFILE_NAMES } from '../../content/index.js'
import { ExitCode } from '../../errors.js'
import { action, reportError } from '../run.js'
import { safeText } from '../safe-text.js'

async function stdinCid (profileName: string): Promise<string> {
  const builder = new CidBuilder(cidProfile(profileName))
  for await (const chunk of process.stdin) builder.update(chunk as Buffer)
  return builder.finish().toString()
}

export function registerCid (program: Command): void {
  program.command('cid')
    .description('print the CID `ipfs add` gives each file, like sha256sum (- reads stdin)')
    .argument('<files...>', 'files to hash')
    .option('--profile <name>', `import profile: ${CID_PROFILE_NAMES.join(', ')} (default: the config's cid_profile with --config, else ${DEFAULT_CID_PROFILE})`)
    .option('--config <path>', 'take the profile from this config\'s cid_profile, so the CIDs are those `ls` and `where` show')
    .action(action(async (files: string[], options: { profile?: string, config?: string }) => {
      // A config's own profile (review: with cid_profile = "unixfs-v0-2015", `cid` printed other CIDs than `ls`).
      const fromConfig = options.profile === undefined && options.config !== undefined
        ? (await import('../../config/index.js')).loadConfig({ configPath: options.config }).cidProfile
        : undefined
      const profile = cidProfile(options.profile ?? fromConfig ?? DEFAULT_CID_PROFILE)
      const { HashPool } = await import('../../watch/index.js')
      const pool = new HashPool()
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
