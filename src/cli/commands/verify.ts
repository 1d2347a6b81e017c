import { existsSync, rmSync } from 'node:fs'
import { dirname, join } from 'node:path'
import type { Command } from 'commander'
import { loadConfig, STATE_NAMES } from '../../config/index.js'
import { ContentIntegrityError, SegmentUnusableError } from '../../errors.js'
import { countOf, printJson } from '../format.js'
import { drillContentLine, failedFilesLine } from '../drill-content.js'
import { action } from '../run.js'
import { explainMissingPointer, withService } from '../service-command.js'
import { runMirrorVerify } from './verify-mirror.js'
import { makeDirsSync } from '../../util/make-dirs.js'

interface VerifyOptions { mirror?: string, config?: string, json?: boolean, full?: boolean, content?: boolean, namespace?: string, network?: string }

const VERIFY_HELP = `
What it checks:
It fetches the pointer's manifest and every segment a restore needs, through the gateways.
Each is verified against its CID, decrypted and checked.
The index is rebuilt aside and compared with this device's files.
A sample of stored files (up to 8, 256 MiB in all) is brought back into a temp dir.
Each is hashed to its CID, and the temp dir is removed after.
--full checks every segment of the whole history; --content brings back every stored file.
On a fresh device (a key and a config, no index yet) it runs before any restore.
There it says there is nothing local to compare, and leaves no state behind.

Mirrors:
--mirror NAME runs the same drill against that mirror alone: its pointer, its gateways or its directory.
It takes a [[mirrors]] name; a directory with no table is read by restore --from PATH.
A mirror is only a second home if it restores.
It exits 3 when the mirror holds no pointer yet.

Results:
It exits 0 when restorable, and 4 naming the first object that fails.
With --content it walks on past a failure: it counts each stored file that would not come back.
It names the first 20, and stops after 20 damaged objects (--json: content.failedFiles).
The result is recorded for status and metrics.
The daemon runs a drill on [verify] schedule (daily), then one for each mirror.`

export function registerVerify (program: Command): void {
  program.command('verify')
    .description('a restore drill: fetch, verify and decrypt what a restore needs, and bring a sample of stored files back. Changes nothing')
    .addHelpText('after', VERIFY_HELP)
    .option('--config <path>', 'config file')
    .option('--namespace <name>', 'default: the config\'s namespace')
    .option('--network <name>', 'default: the config\'s network')
    .option('--full', 'also fetch and check every segment of every publish in the history')
    .option('--content', 'bring back every stored file the publish holds, not a sample')
    .option('--mirror <name>', 'the drill against this [[mirrors]] table alone (its pointer, its gateways or its directory), recorded for status')
    .option('--json', 'print JSON')
    .action(action(async (options: VerifyOptions) => {
      const config = loadConfig({ configPath: options.config })
      if (options.mirror !== undefined) {
        await runMirrorVerify(config, options.mirror, options)
        return
      }
      makeDirsSync(config.stateDir, 0o700)
      const { indexPath, openIndex, readDeviceId } = await import('../../index/index.js')
      const { createLogger } = await import('../../daemon/index.js')
      const logger = createLogger({ level: 'error' })
      await withService(options, async ({ clients, repository }) => {
        const { SyncStore, verify, recordDrill } = await import('../../sync/index.js')
        const pointer = await clients.pointers.current(options.namespace ?? config.namespace, options.network ?? config.network)
          .catch((err: unknown) => { throw explainMissingPointer(err, config) })
        // A fresh device (the key and config, no index yet) is where the drill matters most, before
        // a restore: it runs against an empty index aside and leaves no state behind (a sync.sqlite
        // made here would make `key import` ask for --force).
        const fresh = !existsSync(indexPath(config.stateDir))
        const emptyIndex = join(config.stateDir, STATE_NAMES.snapshots, `verify-empty-${process.pid}.sqlite`)
        if (fresh) makeDirsSync(dirname(emptyIndex), 0o700)
        const index = fresh ? openIndex(emptyIndex) : openIndex(indexPath(config.stateDir), { readonly: true })
        const store = fresh ? undefined : new SyncStore(config.stateDir)
        const kept = new Map<string, string>()
        const cache = store?.manifestCache ?? { get: (cid: string) => kept.get(cid), put: (cid: string, json: string) => { kept.set(cid, json) } }
        try {
          const result = await recordDrill({ store, logger }, pointer.snapshotCid, async () => await verify({ index, repository, logger, deviceId: fresh ? '' : readDeviceId(config.stateDir) ?? '' }, {
            ...repository.readContext('verify', { namespace: options.namespace, network: options.network }),
            cid: pointer.snapshotCid, full: options.full, content: options.content, cache
          }))
          if (options.json === true) printJson({ ...result, localIndex: !fresh })
          else {
            const own = fresh
              ? 'no index on this device yet, so nothing local to compare (`cidsync restore` installs it)'
              : result.own === null ? 'this device\'s files not compared (none there, or this index is behind the pointer, as after `restore --at`: its next publish catches up)' : `${countOf(result.own.compared, 'entry', 'entries')} of this device compared (files, links and directories), ${result.own.differing} differ`
            const files = drillContentLine(result.content, true)
            process.stdout.write(`${result.restorable ? 'restorable' : 'NOT restorable'}: ${result.cid}; ${countOf(result.publishes, 'publish', 'publishes')}, ${countOf(result.segments, 'segment', 'segments')} fetched and checked${files}; ${own}\n`)
          }
          if (result.failed?.file !== undefined) {
            throw new ContentIntegrityError(`${result.failed?.message ?? ''}: a restore from ${result.cid} through the service's gateways would not bring this file back. Its object is damaged or gone from the service: check \`cidsync deal status ${result.failed?.cid ?? ''}\`; the device that stored the file still holds it if it is unchanged there${failedFilesLine(result.content?.failedFiles)}`)
          }
          if (result.failed !== null) throw new SegmentUnusableError(`${result.failed.message}: a restore from ${result.cid} would fail. Publish again from a device that holds the files (\`cidsync snapshot\`; a device whose index lost them: \`cidsync pointer repair\`), then verify again`, result.failed.cid)
        } finally {
          store?.close()
          index.close()
          if (fresh) for (const suffix of ['', '-wal', '-shm']) rmSync(`${emptyIndex}${suffix}`, { force: true })
        }
      })
    }))
}
