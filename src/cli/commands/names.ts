import type { Command } from 'commander'
import { formatTable, printJson } from '../format.js'
import { action } from '../run.js'
import { safeText } from '../safe-text.js'
import { serviceOptions, withService } from '../service-command.js'

const NAMES_HELP = `
Keys by name:
A key the account does not have exits 3.
Given a key's id where its name belongs, it says so and names the key.`

export function registerNames (program: Command): void {
  const names = program.command('names').description('IPNS keys: create, publish, list, remove')
    .addHelpText('after', NAMES_HELP)
  serviceOptions(names.command('create').description('make a new key')).action(action(async (options: { config?: string, json?: boolean }) => {
    await withService(options, async ({ clients }) => {
      const key = await clients.names.create()
      if (options.json === true) printJson(key)
      else process.stdout.write(`${safeText(key.ipnsName)}  ${safeText(key.ipnsId)}\n`)
    })
  }))
  serviceOptions(names.command('publish').description('bind a key to a CID (again: rebind, same id)').argument('<keyName>', 'the key\'s ipnsName').argument('<cid>', 'what it points to'))
    .action(action(async (keyName: string, cid: string, options: { config?: string, json?: boolean }) => {
      const { checkedCid } = await import('../../remote/index.js')
      checkedCid(cid)
      await withService(options, async ({ clients }) => {
        const published = await clients.names.publish(keyName, cid)
        if (options.json === true) printJson(published)
        else process.stdout.write(`${safeText(published.ipnsId)} -> ${safeText(published.value)}\n`)
      })
    }))
  serviceOptions(names.command('list').description('every key and what it points to')).action(action(async (options: { config?: string, json?: boolean }) => {
    await withService(options, async ({ clients }) => {
      const records = await clients.names.list()
      if (options.json === true) printJson(records)
      else process.stdout.write(formatTable(['NAME', 'ID', 'CID'], records.map(r => [r.ipnsName, r.ipnsId, r.cid])))
    })
  }))
  serviceOptions(names.command('remove').description('delete a key').argument('<keyName>', 'the key\'s ipnsName'))
    .action(action(async (keyName: string, options: { config?: string, json?: boolean }) => {
      await withService(options, async ({ clients }) => {
        const removed = await clients.names.remove(keyName)
        if (options.json === true) printJson(removed)
        else for (const key of removed) process.stdout.write(`removed ${safeText(key.name)}  ${safeText(key.id)}\n`)
      })
    }))
}
