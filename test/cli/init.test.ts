import { describe, it, expect } from 'vitest'
import { existsSync } from 'node:fs'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { loadConfig } from '../../src/config/index.js'
import { runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'

describe('cidsync init', () => {
  it('warns that a state dir inside a watched folder is left out of it', async () => {
    const dir = await useTempDir()
    const config = join(dir, 'config.toml')
    const home = join(dir, 'home')
    const init = await runCli(['init', '--config', config, '--folder', home, '--state-dir', join(home, '.local', 'state', 'cidsync')])
    expect(init.code).toBe(0)
    expect(init.stderr).toContain(`cidsync: warning: the state dir ${join(home, '.local', 'state', 'cidsync')} lies inside the watched folder home (${home}): it is left out of the folder, never indexed`)
    expect(loadConfig({ configPath: config, env: {} }).folders[0]?.exclude?.map(e => e.path)).toEqual(['.local/state/cidsync'])
  })
  it('names --config in the next command when the config is not where the daemon looks by itself', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'notes'))
    const config = join(dir, 'elsewhere', 'c.toml')
    const env = { ...process.env, XDG_CONFIG_HOME: join(dir, 'xdg'), CIDSYNC_CONFIG: '' }
    const init = await runCli(['init', '--config', config, '--folder', join(dir, 'notes'), '--state-dir', join(dir, 'state')], { env })
    expect(init.code).toBe(0)
    expect(init.stdout).toContain(`next: cidsync daemon --config ${config}\n`)
    expect(init.stderr).toBe('')
    const none = await runCli(['init', '--config', join(dir, 'bare.toml'), '--state-dir', join(dir, 'state2')], { env })
    expect(none.stdout).toContain(`then run: cidsync daemon --config ${join(dir, 'bare.toml')}\n`)
    // At the default path, the daemon finds it without the flag.
    const plain = await runCli(['init', '--folder', join(dir, 'notes'), '--state-dir', join(dir, 'state3')], { env })
    expect(plain.stdout).toContain(`wrote ${join(dir, 'xdg', 'cidsync', 'config.toml')}`)
    expect(plain.stdout).toContain('next: cidsync daemon\n')
    // A path with a space is quoted, so the line can be pasted.
    const spaced = await runCli(['init', '--config', join(dir, 'my configs', 'c.toml'), '--state-dir', join(dir, 'state4'), '--folder', join(dir, 'notes')], { env })
    expect(spaced.stdout).toContain(`next: cidsync daemon --config '${join(dir, 'my configs', 'c.toml')}'\n`)
  })

  it('warns about a --folder that does not exist, and still writes it', async () => {
    const dir = await useTempDir()
    const config = join(dir, 'c.toml')
    const init = await runCli(['init', '--config', config, '--folder', join(dir, 'Notes'), '--state-dir', join(dir, 'state')])
    expect(init.code).toBe(0)
    expect(init.stderr).toContain(`cidsync: warning: the folder ${join(dir, 'Notes')} does not exist: it is written to the config, and the daemon shows it as an error until it is created`)
    expect(loadConfig({ configPath: config, env: {} }).folders.map(f => f.path)).toEqual([join(dir, 'Notes')])
  })

  it('turns storing on for the folders it adds and says so; an older config without the key stores nothing', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'notes'))
    const config = join(dir, 'c.toml')
    const init = await runCli(['init', '--config', config, '--folder', join(dir, 'notes'), '--state-dir', join(dir, 'state')])
    expect(init.code).toBe(0)
    expect(init.stdout).toContain('content of notes is stored too (store = true; sealed with the snapshot key), so any device can bring each file back; `store = false` keeps only the index\n')
    expect(loadConfig({ configPath: config, env: {} }).folders.map(f => f.store)).toEqual([true])
    // A config from before content custody has no `store` key: it uploads nothing new.
    const old = join(dir, 'old.toml')
    await writeFile(old, `state_dir = ${JSON.stringify(join(dir, 'state'))}\n[[folders]]\nname = "notes"\npath = ${JSON.stringify(join(dir, 'notes'))}\n`)
    expect(loadConfig({ configPath: old, env: {} }).folders.map(f => f.store)).toEqual([false])
  })

  it('given another device\'s key, names restore and restore --files as the next steps, before the daemon', async () => {
    const dir = await useTempDir()
    await writeFile(join(dir, 'old.toml'), '')
    const exported = (await runCli(['key', 'export', '--config', join(dir, 'old.toml')], { env: { ...process.env, CIDSYNC_STATE_DIR: join(dir, 'old') } })).stdout
    const config = join(dir, 'c.toml')
    const init = await runCli(['init', '--config', config, '--folder', join(dir, 'notes'), '--state-dir', join(dir, 'state'), '--key', '-'], { input: exported })
    expect(init.code, init.stderr).toBe(0)
    expect(init.stdout).not.toContain('next: cidsync daemon')
    const steps = init.stdout.slice(init.stdout.indexOf('next, to bring back what the other devices published'))
    expect(steps).toContain('set [service] as on the other device')
    const order = [`cidsync restore --config ${config} `, `cidsync restore --files --config ${config} `, `cidsync daemon --config ${config}\n`].map(s => steps.indexOf(s))
    expect(order.every(i => i > 0)).toBe(true)
    expect([...order].sort((x, y) => x - y)).toEqual(order)
    // Without --folder too: the folders to edit first, then the same steps.
    const bare = await runCli(['init', '--config', join(dir, 'bare.toml'), '--state-dir', join(dir, 'state2'), '--key', '-'], { input: exported })
    expect(bare.code, bare.stderr).toBe(0)
    expect(bare.stdout).toContain('edit [[folders]] to name what to watch (each folder by the name the other devices give it); next, to bring back what the other devices published')
    expect(bare.stdout).toContain(`cidsync restore --files --config ${join(dir, 'bare.toml')} `)
  })

  it('--remote URL writes a remote [service] with that one url, and says to sign in first', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'notes'))
    const config = join(dir, 'c.toml')
    const one = 'http://127.0.0.1:8790'
    const init = await runCli(['init', '--config', config, '--folder', join(dir, 'notes'), '--state-dir', join(dir, 'state'), '--remote', one])
    expect(init.code, init.stderr).toBe(0)
    expect(loadConfig({ configPath: config, env: {} }).service).toMatchObject({ mode: 'remote', dealUrl: one, apiUrl: one, pointerUrl: one, uploadUrl: one, gateways: [one] })
    expect(init.stdout).toContain(`service ${one} (mode = "remote"); sign in first: cidsync login --wallet-key-file FILE --config ${config}\n`)
    const bad = await runCli(['init', '--config', join(dir, 'bad.toml'), '--state-dir', join(dir, 'state'), '--remote', 'nas:8790'])
    expect(bad.code).toBe(2)
    expect(bad.stderr).toContain('--remote "nas:8790" is not an http(s) URL')
    expect(existsSync(join(dir, 'bad.toml'))).toBe(false)
  })

  it('says what each folder ignores by default, and where to change it', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'notes'))
    const config = join(dir, 'c.toml')
    const init = await runCli(['init', '--config', config, '--folder', join(dir, 'notes'), '--state-dir', join(dir, 'state')])
    expect(init.code, init.stderr).toBe(0)
    const ignore = loadConfig({ configPath: config, env: {} }).folders[0]?.ignore ?? []
    expect(ignore).toContain('**/node_modules/**')
    expect(init.stdout).toContain(`ignored in each folder: ${ignore.join(', ')}; change a folder's ignore = in ${config}\n`)
  })

  it('writes a retention policy and says where to change it; a config without one keeps every publish', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'notes'))
    const config = join(dir, 'c.toml')
    const init = await runCli(['init', '--config', config, '--folder', join(dir, 'notes'), '--state-dir', join(dir, 'state')])
    expect(init.code, init.stderr).toBe(0)
    expect(init.stdout).toContain(`retention policy written under [retention] in ${config}: the daemon forgets and prunes by it weekly (docs/retention.md)\n`)
    expect(init.stdout).not.toMatch(/fewer publishes are kept|nothing is deleted/)
    expect(await readFile(config, 'utf8')).toContain('The daemon forgets and prunes by it on `schedule`')
    expect(await readFile(config, 'utf8')).not.toContain('nothing is deleted')
    // A link is kept as a link, never skipped: the comment must not say otherwise.
    expect(await readFile(config, 'utf8')).toContain('false: keep each as a link')
    expect(loadConfig({ configPath: config, env: {} }).retention?.policy).toMatchObject({ keepHourly: 24, keepDaily: 14, keepWeekly: 8, keepMonthly: 24, keepYearly: 10 })
    const old = join(dir, 'old.toml')
    await writeFile(old, `state_dir = ${JSON.stringify(join(dir, 'state'))}\n`)
    expect(loadConfig({ configPath: old, env: {} }).retention).toBeUndefined()
  })

  it('refuses a --folder given twice (exit 2), writing nothing: the daemon would index and store it twice', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'notes'))
    const config = join(dir, 'c.toml')
    const init = await runCli(['init', '--config', config, '--folder', join(dir, 'notes'), '--folder', `${join(dir, 'notes')}/`, '--state-dir', join(dir, 'state')])
    expect(init.code, init.stderr).toBe(2)
    expect(init.stderr).toContain(`--folder ${join(dir, 'notes')} is given twice: each folder is watched once, under one name [ERR_USAGE]`)
    expect(existsSync(config)).toBe(false)
  })
})
