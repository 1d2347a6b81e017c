import { describe, it, expect } from 'vitest'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { loadConfig, renderConfigTemplate, DEFAULT_SETTLE_MS, DEFAULT_STATUS_PORT } from '../../src/config/index.js'
import { ConfigError } from '../../src/errors.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { writeTestConfig } from '../helpers/config-file.js'

async function configFile (dir: string, text: string): Promise<string> {
  const path = join(dir, 'config.toml')
  await writeFile(path, text)
  return path
}

function loadError (fn: () => unknown): ConfigError {
  try {
    fn()
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError)
    return err as ConfigError
  }
  throw new Error('expected a config error')
}

describe('loading the config', () => {
  it('fills every default, and the state dir from XDG when nothing says otherwise', async () => {
    const dir = await useTempDir()
    const config = loadConfig({ configPath: await configFile(dir, ''), env: { XDG_STATE_HOME: '/xdg/state' }, home: '/home/u' })
    expect(config).toMatchObject({
      namespace: 'default', network: 'mainnet', stateDir: '/xdg/state/cidsync', cidProfile: 'kubo-cidv1', folders: [],
      status: { listen: { kind: 'tcp', host: '127.0.0.1', port: DEFAULT_STATUS_PORT } },
      service: { mode: 'embedded', dir: '/xdg/state/cidsync/service' },
      snapshot: { schedule: '*/15 * * * *', encryption: 'aes-256-gcm', deal: true, ipnsKey: '' },
      reconcile: { schedule: '0 * * * *' }
    })
  })

  it('prefers systemd\'s $STATE_DIRECTORY, then ~/.local/state', async () => {
    const dir = await useTempDir()
    const path = await configFile(dir, '')
    expect(loadConfig({ configPath: path, env: { STATE_DIRECTORY: '/var/lib/cidsync:/var/lib/other' } }).stateDir).toBe('/var/lib/cidsync')
    expect(loadConfig({ configPath: path, env: {}, home: '/home/u' }).stateDir).toBe('/home/u/.local/state/cidsync')
  })

  it('expands ~ and takes relative paths from the config file\'s folder', async () => {
    const dir = await useTempDir()
    const path = await configFile(dir, `state_dir = "state"
[[folders]]
name = "notes"
path = "~/notes"
[[folders]]
name = "here"
path = "./here"
ignore = ["*.tmp"]
follow_symlinks = true
`)
    const config = loadConfig({ configPath: path, env: {}, home: '/home/u' })
    expect(config.stateDir).toBe(join(dir, 'state'))
    expect(config.folders).toEqual([
      { name: 'notes', path: '/home/u/notes', ignore: [], followSymlinks: false, store: false },
      { name: 'here', path: join(dir, 'here'), ignore: ['*.tmp'], followSymlinks: true, store: false }
    ])
  })

  it('marks cidsync\'s own dirs inside a watched folder as excluded from it (the state dir, the embedded service\'s dir)', async () => {
    const dir = await useTempDir()
    const path = await configFile(dir, `[[folders]]
name = "home"
path = "~"
[[folders]]
name = "notes"
path = "~/notes"
[[folders]]
name = "data"
path = "/data"
[service]
dir = "/data/shared/service"
`)
    const config = loadConfig({ configPath: path, env: {}, home: '/home/u' })
    expect(config.folders.map(f => [f.name, f.exclude])).toEqual([
      ['home', [{ path: '.local/state/cidsync', dir: '/home/u/.local/state/cidsync', what: 'the state dir' }]],
      ['notes', undefined],
      ['data', [{ path: 'shared/service', dir: '/data/shared/service', what: 'the embedded service\'s dir (service.dir)' }]]
    ])
    // The default service dir lies in the state dir: one exclusion covers both. Remote mode has no service dir.
    const inState = loadConfig({ configPath: await configFile(dir, '[[folders]]\nname = "home"\npath = "~"\n[service]\nmode = "remote"\ndeal_url = "http://127.0.0.1:1"\napi_url = "http://127.0.0.1:1"\npointer_url = "http://127.0.0.1:1"\nupload_url = "http://127.0.0.1:1"\ngateways = ["http://127.0.0.1:1"]\n'), env: {}, home: '/home/u' })
    expect(inState.folders[0]?.exclude?.map(e => e.path)).toEqual(['.local/state/cidsync'])
    // A folder beside the state dir (a name that only starts the same) is not touched.
    const beside = loadConfig({ configPath: await configFile(dir, 'state_dir = "/srv/state"\n[[folders]]\nname = "s"\npath = "/srv/state-two"\n'), env: {}, home: '/home/u' })
    expect(beside.folders[0]?.exclude).toBeUndefined()
  })

  it('finds the file by --config, then $CIDSYNC_CONFIG, then the XDG default', async () => {
    const dir = await useTempDir()
    const byEnv = await configFile(dir, 'namespace = "from-env"')
    await writeFile(join(dir, 'flag.toml'), 'namespace = "from-flag"')
    expect(loadConfig({ configPath: join(dir, 'flag.toml'), env: { CIDSYNC_CONFIG: byEnv } }).namespace).toBe('from-flag')
    expect(loadConfig({ env: { CIDSYNC_CONFIG: byEnv } }).namespace).toBe('from-env')
    const xdg = join(dir, 'xdg')
    await import('node:fs/promises').then(async fs => await fs.mkdir(join(xdg, 'cidsync'), { recursive: true }))
    await writeFile(join(xdg, 'cidsync', 'config.toml'), 'namespace = "from-xdg"')
    expect(loadConfig({ env: { XDG_CONFIG_HOME: xdg } }).namespace).toBe('from-xdg')
  })

  it('lets CIDSYNC_* variables override keys, typed', async () => {
    const dir = await useTempDir()
    const config = loadConfig({
      configPath: await configFile(dir, 'network = "calibration"\n[snapshot]\ndeal = true'),
      env: { CIDSYNC_NETWORK: 'mainnet', CIDSYNC_SNAPSHOT_DEAL: 'false', CIDSYNC_STATUS_LISTEN: '[::1]:9000', CIDSYNC_SERVICE_GATEWAYS: 'https://a.example, https://b.example', CIDSYNC_WATCH_HASH_WORKERS: '3' }
    })
    expect(config.network).toBe('mainnet')
    expect(config.snapshot.deal).toBe(false)
    expect(config.status.listen).toEqual({ kind: 'tcp', host: '::1', port: 9000 })
    expect(config.service.gateways).toEqual(['https://a.example', 'https://b.example'])
    expect(config.watch.hashWorkers).toBe(3)
  })

  it('names the key, the value, what is allowed and the file for a bad value', async () => {
    const dir = await useTempDir()
    const path = await configFile(dir, '[snapshot]\nencryption = "rot13"')
    const err = loadError(() => loadConfig({ configPath: path, env: {} }))
    expect(err.message).toContain(`snapshot.encryption = "rot13" (in ${path}): expected one of "aes-256-gcm", "none"`)
    expect(err.exitCode).toBe(2)
  })

  it('says what each form of a value may be, in words: never zod\'s bare "Invalid input" or "a int"', async () => {
    const dir = await useTempDir()
    for (const [table, line, says] of [
      ['verify', 'schedule = 12', 'expected "" or a string'],
      ['content', 'max_file_size = true', 'expected a number or a string'],
      ['content', 'max_file_size = 1.5', 'expected a whole number or a string'],
      ['content', 'concurrency = 1.5', 'expected a whole number'],
      ['watch', 'rescan_interval_seconds = 5', 'expected 0 (off) or 60 to 2592000 (30 days)']
    ] as const) {
      const path = await configFile(dir, `[${table}]\n${line}`)
      const err = loadError(() => loadConfig({ configPath: path, env: {} }))
      expect(err.message, line).toContain(`${table}.${line} (in ${path}): ${says}`)
      expect(err.message, line).not.toMatch(/Invalid input|a int\b/)
    }
  })

  it('refuses a namespace or network longer than the pointer service takes, the network with room for the prune list\'s with [retention]', async () => {
    const dir = await useTempDir()
    const path = await configFile(dir, `namespace = "${'n'.repeat(256)}"\nnetwork = "${'w'.repeat(256)}"`)
    expect(loadConfig({ configPath: path, env: {} }).network).toHaveLength(256)
    expect(loadError(() => loadConfig({ configPath: path, env: { CIDSYNC_NETWORK: 'w'.repeat(257) } })).message).toMatch(/at most 256 characters/)
    expect(loadError(() => loadConfig({ configPath: path, env: { CIDSYNC_NAMESPACE: 'n'.repeat(257) } })).message).toMatch(/at most 256 characters/)
    // With a retention policy, a prune's list pointer adds ~prune-list to the network's name.
    const kept = await configFile(dir, `network = "${'w'.repeat(246)}"\n[retention]\nkeep_last = 3\n`)
    const long = loadError(() => loadConfig({ configPath: kept, env: {} }))
    expect(long.message).toMatch(/at most 245 characters with \[retention\].*~prune-list.*shorten it/)
    expect(loadConfig({ configPath: kept, env: { CIDSYNC_NETWORK: 'w'.repeat(245) } }).network).toHaveLength(245)
  })

  it('names an unknown key and lists the allowed ones', async () => {
    const dir = await useTempDir()
    const path = await configFile(dir, '[snapshot]\nschedual = "* * * * *"')
    expect(loadError(() => loadConfig({ configPath: path, env: {} })).message)
      .toContain('unknown key snapshot.schedual (in ' + path + '): allowed keys here are schedule, encryption, deal, ipns_key')
  })

  it.each([
    ['[[folders]]\nname = "bad name!"\npath = "/x"', 'folders[0].name = "bad name!"'],
    ['[[folders]]\nname = "a"\npath = "/x"\n[[folders]]\nname = "a"\npath = "/y"', 'folders[1].name = "a"'],
    ['[[folders]]\nname = "a"', 'folders[0].path = (missing)'],
    ['[[folders]]\nname = "a"\npath = "/x"\n[[folders]]\nname = "b"\npath = "/x/"', 'folders "a" and "b" have the same path /x'],
    ['[status]\nlisten = "0.0.0.0:80"', 'status.listen = "0.0.0.0:80"'],
    ['[status]\nlisten = "unix:relative.sock"', 'expected an absolute socket path'],
    ['[snapshot]\nschedule = "every hour"', 'expected a cron expression'],
    ['[service]\nmode = "cloud"', 'service.mode = "cloud"'],
    ['[service]\ngateways = ["ftp://x"]', 'service.gateways[0] = "ftp://x"'],
    ['[watch]\nhash_workers = -1', 'watch.hash_workers = -1'],
    ['cid_profile = "sha1"', 'expected one of "kubo-cidv1", "unixfs-v0-2015", "unixfs-v1-2025"'],
    ['namespace = 5', 'namespace = 5'],
    ['this is not toml', 'is not valid TOML']
  ])('refuses %j', async (text, expected) => {
    const dir = await useTempDir()
    const path = await configFile(dir, text)
    expect(loadError(() => loadConfig({ configPath: path, env: {} })).message).toContain(expected)
  })

  it('says which environment variable held a bad value', async () => {
    const dir = await useTempDir()
    const path = await configFile(dir, '')
    expect(loadError(() => loadConfig({ configPath: path, env: { CIDSYNC_SNAPSHOT_DEAL: 'maybe' } })).message)
      .toBe('CIDSYNC_SNAPSHOT_DEAL = "maybe": expected true (1, true, yes, on) or false (0, false, no, off), in any case')
    expect(loadError(() => loadConfig({ configPath: path, env: { CIDSYNC_SNAPSHOT_ENCRYPTION: 'rot13' } })).message)
      .toContain('snapshot.encryption = "rot13" (from CIDSYNC_SNAPSHOT_ENCRYPTION)')
  })

  it('says on which line and column a TOML file stops parsing, and shows it', async () => {
    const dir = await useTempDir()
    const path = await configFile(dir, 'namespace = "a"\n\n[snapshot]\nschedule = "0 * * * *\ndeal = true\n')
    const message = loadError(() => loadConfig({ configPath: path, env: {} })).message
    expect(message).toContain(`config file ${path} is not valid TOML: line 4, column `)
    expect(message).toContain('schedule = "0 * * * *')
  })

  it('refuses a --config that does not exist, saying how to make one', async () => {
    const dir = await useTempDir()
    expect(loadError(() => loadConfig({ configPath: join(dir, 'nope.toml'), env: {} })).message).toContain('cidsync init --config')
  })

  it('ships an example config equal to what `cidsync init` writes, and valid', async () => {
    const example = await readFile(new URL('../../config/cidsync.example.toml', import.meta.url), 'utf8')
    expect(example).toBe(renderConfigTemplate())
    const dir = await useTempDir()
    expect(loadConfig({ configPath: await configFile(dir, example), env: {}, home: '/home/u' }).folders[0]?.path).toBe('/home/u/notes')
  })

  it('shows a directory mirror in the config init writes, which loads once uncommented', async () => {
    const text = renderConfigTemplate()
    const start = text.indexOf('# [[mirrors]]\n# name = "usb"')
    expect(start, 'a commented directory mirror').toBeGreaterThan(0)
    const table = text.slice(start).split('\n').slice(0, 3).map(line => line.replace(/^# /, '')).join('\n')
    const dir = await useTempDir()
    expect(loadConfig({ configPath: await configFile(dir, table + '\n'), env: {} }).mirrors[0]).toMatchObject({ name: 'usb', path: '/media/usb/cidsync' })
  })
})

describe('the service section', () => {
  it('needs every URL in remote mode, naming the missing one', async () => {
    const dir = await useTempDir()
    const path = join(dir, 'c.toml')
    await writeFile(path, '[service]\nmode = "remote"\ndeal_url = "https://deal.example"\n')
    expect(loadError(() => loadConfig({ configPath: path, env: {} })).message).toContain('service.api_url = (missing) (in')
    await writeFile(path, '[service]\nmode = "remote"\ndeal_url = "https://d.example"\napi_url = "https://a.example"\npointer_url = "https://p.example"\nupload_url = "https://u.example"\ngateways = ["https://g.example"]\n')
    expect(loadConfig({ configPath: path, env: {} }).service).toMatchObject({ mode: 'remote', gateways: ['https://g.example'] })
  })

  it('takes one url for every part, as a mirror does; remote by it, never with the parts or mode = "embedded"', async () => {
    const dir = await useTempDir()
    const path = join(dir, 'c.toml')
    const one = 'http://127.0.0.1:8790'
    await writeFile(path, `[service]\nurl = "${one}"\n`)
    expect(loadConfig({ configPath: path, env: {} }).service).toMatchObject({ mode: 'remote', dealUrl: one, apiUrl: one, pointerUrl: one, uploadUrl: one, gateways: [one] })
    expect(loadConfig({ configPath: path, env: { CIDSYNC_SERVICE_URL: 'https://s.example' } }).service).toMatchObject({ mode: 'remote', apiUrl: 'https://s.example', gateways: ['https://s.example'] })
    await writeFile(path, `[service]\nmode = "remote"\nurl = "${one}"\napi_url = "${one}"\n`)
    expect(loadError(() => loadConfig({ configPath: path, env: {} })).message).toContain('expected either url (a self-hosted `cidsync local-service`) or deal_url')
    await writeFile(path, `[service]\nmode = "embedded"\nurl = "${one}"\n`)
    expect(loadError(() => loadConfig({ configPath: path, env: {} })).message).toContain('expected mode = "remote" with url')
    await writeFile(path, '[service]\nurl = "ftp://x.example"\n')
    expect(loadError(() => loadConfig({ configPath: path, env: {} })).message).toContain('service.url')
    await writeFile(path, '[service]\n')
    expect(loadConfig({ configPath: path, env: {} }).service.mode).toBe('embedded')
  })
})

describe('standard directories', () => {
  it('follow systemd, then XDG, then the platform\'s own place', async () => {
    const { defaultConfigPath, defaultStateDir } = await import('../../src/config/index.js')
    expect(defaultStateDir({ STATE_DIRECTORY: '/var/lib/cidsync' }, '/home/u', 'linux')).toBe('/var/lib/cidsync')
    expect(defaultConfigPath({ CONFIGURATION_DIRECTORY: '/etc/cidsync' }, '/home/u', 'linux')).toBe('/etc/cidsync/config.toml')
    expect(defaultStateDir({}, '/home/u', 'linux')).toBe('/home/u/.local/state/cidsync')
    expect(defaultConfigPath({}, '/home/u', 'linux')).toBe('/home/u/.config/cidsync/config.toml')
    expect(defaultStateDir({}, '/Users/u', 'darwin')).toBe('/Users/u/Library/Application Support/cidsync/state')
    expect(defaultConfigPath({}, '/Users/u', 'darwin')).toBe('/Users/u/Library/Application Support/cidsync/config.toml')
    expect(defaultConfigPath({ XDG_CONFIG_HOME: '/x' }, '/Users/u', 'darwin')).toBe('/x/cidsync/config.toml')
  })
})

describe('the tests\' config writer (test/helpers/config-file.ts)', () => {
  it('writes TOML that loads as the config it was given, over the usual test config', async () => {
    const dir = await useTempDir()
    const path = await writeTestConfig(dir, { log_level: 'error', watch: { hash_workers: 1 }, snapshot: { quiet_seconds: 3600 } })
    const config = loadConfig({ configPath: path, env: {} })
    expect(config.stateDir).toBe(join(dir, 'state'))
    expect(config.folders).toMatchObject([{ name: 'notes', path: join(dir, 'notes') }])
    expect(config.status.listen).toEqual({ kind: 'tcp', host: '127.0.0.1', port: 0 })
    expect(config.logLevel).toBe('error')
    // A section given is merged with the usual one, key by key; a key given as undefined takes its default.
    expect(config.watch).toMatchObject({ settleMs: 20, hashWorkers: 1 })
    const defaults = loadConfig({ configPath: await writeTestConfig(dir, { watch: { settle_ms: undefined } }, 'other.toml'), env: {} })
    expect(defaults.watch.settleMs).toBe(DEFAULT_SETTLE_MS)
  })

  it('refuses a key the config does not know before anything is written', async () => {
    const dir = await useTempDir()
    await expect(writeTestConfig(dir, { watch: { settle: 20 } as never })).rejects.toThrow(/settle/)
  })
})
