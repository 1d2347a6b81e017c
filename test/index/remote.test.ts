import { describe, expect, it } from 'vitest'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { startInProcessDaemon, statusOf } from '../helpers/in-process-daemon.js'
import { httpGet } from '../helpers/http.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { until } from '../helpers/wait.js'

describe('this device\'s files as the account sees them (status `account`, the dashboard\'s Account)', () => {
  it('counts a file whose content is stored sealed as stored, not local only; an unstored folder\'s files stay local only', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'plain'))
    const { port, token, notes } = await startInProcessDaemon(dir, {
      folders: [{ name: 'notes', path: 'notes', store: true }, { name: 'plain', path: 'plain' }],
      snapshot: { quiet_seconds: 3600, min_interval_seconds: 0, deal: false }
    })
    await writeFile(join(notes, 'a.md'), 'alpha')
    await writeFile(join(notes, 'b.md'), 'beta')
    await writeFile(join(dir, 'plain', 'c.md'), 'gamma')
    await until(async () => (await statusOf(port)).index.files === 3 ? true : undefined, 30_000, 'three files indexed')
    const asked = Date.now()
    const published = await until(async () => {
      const answer = await httpGet({ port }, '/snapshot', { method: 'POST', headers: { authorization: `Bearer ${token}` } })
      return answer.status === 200 ? answer : undefined
    }, 60_000, 'a publish')
    expect(JSON.parse(published.body)).toMatchObject({ content: { notStored: [] } })
    // Counted after each reconciliation (a publish brings one; this one is surely after it).
    const reconciled = await httpGet({ port }, '/reconcile', { method: 'POST', headers: { authorization: `Bearer ${token}` } })
    expect(reconciled.status, reconciled.body).toBe(200)
    const account = await until(async () => {
      const a = (await statusOf(port)).account
      return a !== null && Date.parse(a.countedAt) >= asked ? a : undefined
    }, 60_000, 'the account counted after the publish')
    expect(account).toMatchObject({ stored: 2, sentForDeal: 0, localOnly: 1 })
  }, 120_000)
})
