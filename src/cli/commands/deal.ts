import type { Command } from 'commander'
import { formatTable, printJson } from '../format.js'
import { action } from '../run.js'
import { serviceOptions, withService } from '../service-command.js'

/** Bad input is refused before the service is reached (exit 2). */
async function checkCid (cid: string): Promise<void> {
  (await import('../../remote/index.js')).checkedCid(cid)
}

/** `2026-11-24 13:00Z`: a deal's start or end (minutes are its precision); the epoch when it is no time. */
function when (at: string | undefined, epoch: number | undefined): string {
  if (at !== undefined) return at.replace('T', ' ').replace(/:\d\d\.\d+Z$/, 'Z')
  return epoch === undefined ? '' : `epoch ${epoch}`
}

const DEAL_STATUS_HELP = `
Times:
Each deal's start and end are shown as UTC times.
They are Filecoin mainnet epochs: 30 s each, from 2020-08-24T22:00Z.
--json keeps the epochs and adds startAt and endAt.`

export function registerDeal (program: Command): void {
  const deal = program.command('deal').description('storage deals: ask for one, see where it is')
  serviceOptions(deal.command('add').description('ask for a storage deal for a CID').argument('<cid>'))
    .action(action(async (cid: string, options: { config?: string, json?: boolean }) => {
      await checkCid(cid)
      await withService(options, async ({ clients }) => {
        await clients.deals.addCid(cid)
        if (options.json === true) printJson({ cid, requested: true })
        else process.stdout.write(`deal requested for ${cid}: it can take up to two days (cidsync deal status ${cid})\n`)
      })
    }))
  serviceOptions(deal.command('status').description('the deals made for a CID').addHelpText('after', DEAL_STATUS_HELP).argument('<cid>'))
    .action(action(async (cid: string, options: { config?: string, json?: boolean }) => {
      await checkCid(cid)
      await withService(options, async ({ clients }) => {
        const deals = await clients.deals.dealStatus(cid)
        if (options.json === true) printJson(deals)
        else if (deals.length === 0) process.stdout.write(`no deal yet for ${cid}\n`)
        else process.stdout.write(formatTable(['DEAL', 'PROVIDER', 'STATUS', 'START', 'END'], deals.map(d => [String(d.dealId ?? ''), d.provider ?? '', d.status ?? '', when(d.startAt, d.startEpoch), when(d.endAt, d.endEpoch)])))
      })
    }))
}
