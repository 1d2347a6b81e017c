import type { Command } from 'commander'
import { formatBytes, formatTable } from '../format.js'
import { action } from '../run.js'
import { serviceOptions, withService } from '../service-command.js'

const FILES_HELP = `
Pages:
--json prints one record a line, as the pages arrive.
If the service stops moving through the pages, it exits 1, saying how many of the total it read.`

export function registerFiles (program: Command): void {
  serviceOptions(program.command('files').description('the account\'s uploads, every page, newest first').addHelpText('after', FILES_HELP))
    .action(action(async (options: { config?: string, json?: boolean }) => {
      await withService(options, async ({ clients }) => {
        if (options.json === true) {
          // One record per line as pages arrive: memory stays flat however long the listing.
          for await (const record of clients.files()) process.stdout.write(JSON.stringify(record) + '\n')
          return
        }
        const rows: string[][] = []
        for await (const r of clients.files()) {
          rows.push([r.cid, formatBytes(r.fileSizeInBytes), r.sentForDeal === 'yes' ? 'yes' : r.sentForDeal ?? '', r.createdAt === undefined ? '' : new Date(r.createdAt).toISOString(), r.fileName])
        }
        process.stdout.write(formatTable(['CID', 'SIZE', 'DEAL', 'CREATED', 'NAME'], rows, new Set([1])))
      })
    }))
}
