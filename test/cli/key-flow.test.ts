import { describe, expect, it } from 'vitest'
import { spawn, spawnSync } from 'node:child_process'
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { CLI, runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { until, within } from '../helpers/wait.js'

const hasScript = spawnSync('script', ['--version']).status === 0


/** Device a publishes one file; device b is set up with a's key carried over (`key export` / `key import`). */
async function publishedAndCarried (root: string, env: NodeJS.ProcessEnv): Promise<{ a: string, b: string }> {
    for (const name of ['a', 'b']) await mkdir(join(root, name, 'notes'), { recursive: true })
    await writeFile(join(root, 'a', 'notes', 'one.md'), 'one')
    const a = join(root, 'a.toml')
    const b = join(root, 'b.toml')
    expect((await runCli(['init', '--config', a, '--folder', join(root, 'a', 'notes'), '--state-dir', join(root, 'a', 'state')], { env })).code).toBe(0)
    expect((await runCli(['snapshot', '--config', a], { env })).code).toBe(0)
    const exported = (await runCli(['key', 'export', '--config', a], { env })).stdout
    expect((await runCli(['init', '--config', b, '--folder', join(root, 'b', 'notes'), '--state-dir', join(root, 'b', 'state')], { env })).code).toBe(0)
    expect((await runCli(['key', 'import', '--config', b], { env, input: exported })).code).toBe(0)
  return { a, b }
}

describe('carrying the snapshot key to a new device, as docs/operations.md says', () => {
  it('init, then key import, then restore: the unused key init made is replaced without --force', async () => {
    const root = await useTempDir()
    const env = { ...process.env, CIDSYNC_SERVICE_DIR: join(root, 'service'), CIDSYNC_STATUS_LISTEN: '127.0.0.1:0' }
    for (const name of ['a', 'b']) await mkdir(join(root, name, 'notes'), { recursive: true })
    await writeFile(join(root, 'a', 'notes', 'one.md'), 'one')
    const a = join(root, 'a.toml')
    const b = join(root, 'b.toml')
    expect((await runCli(['init', '--config', a, '--folder', join(root, 'a', 'notes'), '--state-dir', join(root, 'a', 'state')], { env })).code).toBe(0)
    expect((await runCli(['snapshot', '--config', a], { env })).code).toBe(0)
    const exported = (await runCli(['key', 'export', '--config', a], { env })).stdout

    const init = await runCli(['init', '--config', b, '--folder', join(root, 'b', 'notes'), '--state-dir', join(root, 'b', 'state')], { env })
    expect(init.stdout).toContain('snapshot key ')
    const imported = await runCli(['key', 'import', '--config', b], { env, input: exported })
    expect(imported.code).toBe(0)
    expect(imported.stdout).toContain('replacing the unused one `init` made')
    expect((await runCli(['restore', '--config', b], { env })).code).toBe(0)

    // Once it has restored (or published), a different key needs --force.
    await writeFile(join(root, 'c.toml'), '')
    const other = (await runCli(['key', 'export', '--config', join(root, 'c.toml')], { env: { ...env, CIDSYNC_STATE_DIR: join(root, 'c') } })).stdout
    const refused = await runCli(['key', 'import', '--config', b], { env, input: other })
    expect(refused.code).toBe(2)
    expect(refused.stderr).toContain('add --force to replace it')
  })

  it('a damaged snapshot.key is replaced by key import --force, as the error says', async () => {
    const root = await useTempDir()
    const env = { ...process.env, CIDSYNC_STATE_DIR: join(root, 'state'), CIDSYNC_STATUS_LISTEN: '127.0.0.1:0' }
    await writeFile(join(root, 'x.toml'), '')
    const exported = (await runCli(['key', 'export', '--config', join(root, 'x.toml')], { env: { ...env, CIDSYNC_STATE_DIR: join(root, 'other') } })).stdout
    await mkdir(join(root, 'state'), { recursive: true, mode: 0o700 })
    await writeFile(join(root, 'state', 'snapshot.key'), 'half a key\n', { mode: 0o600 })
    const broken = await runCli(['key', 'export', '--config', join(root, 'x.toml')], { env })
    expect(broken.stderr).toContain('`cidsync key import --force`')
    const refused = await runCli(['key', 'import', '--config', join(root, 'x.toml')], { env, input: exported })
    expect(refused.code).toBe(2)
    expect(refused.stderr).toContain('add --force to replace it')
    const forced = await runCli(['key', 'import', '--force', '--config', join(root, 'x.toml')], { env, input: exported })
    expect(forced.code).toBe(0)
    expect((await runCli(['key', 'export', '--config', join(root, 'x.toml')], { env })).stdout).toBe(exported)
  })

  it('a new device on its own embedded service finds no pointer, and restore says which service it asked and what to do', async () => {
    const root = await useTempDir()
    const env = { ...process.env, CIDSYNC_STATUS_LISTEN: '127.0.0.1:0' }
    const { b } = await publishedAndCarried(root, env)

    // Each device's embedded service is a separate account: b's holds no pointer.
    const restore = await runCli(['restore', '--config', b], { env })
    expect(restore.code).toBe(3)
    expect(restore.stderr).toContain(`nothing stored for namespace default on network mainnet: asked the embedded service at ${join(root, 'b', 'state', 'service')}, a separate account per service dir`)
    expect(restore.stderr).toContain('set `[service] dir` to the service dir that device uses')
    // The other way back, when the first device is gone and a USB disk holds a copy.
    expect(restore.stderr).toContain('or restore from a mirror or a directory store (a USB disk): `cidsync restore --from NAME|PATH`')
    expect(restore.stderr).toContain('[ERR_POINTER_NOT_FOUND]')
    // The drill before a restore, and history, say the same, not a bare "nothing stored".
    for (const command of ['verify', 'history']) {
      const other = await runCli([command, '--config', b], { env })
      expect(other.code).toBe(3)
      expect(other.stderr).toContain('a separate account per service dir')
    }

    // Pointed at a's service dir, as the message says, it finds a's snapshot.
    const shared = { ...env, CIDSYNC_SERVICE_DIR: join(root, 'a', 'state', 'service') }
    expect((await runCli(['restore', '--config', b], { env: shared })).code).toBe(0)
  })

  it('key export refuses when CIDSYNC_SNAPSHOT_PASSPHRASE is set, instead of printing a key that seals nothing', async () => {
    const root = await useTempDir()
    const env = { ...process.env, CIDSYNC_SNAPSHOT_PASSPHRASE: 'correct horse' }
    await writeFile(join(root, 'c.toml'), `state_dir = "${join(root, 'state')}"\n`)
    const refused = await runCli(['key', 'export', '--config', join(root, 'c.toml')], { env })
    expect(refused).toMatchObject({ code: 2, stdout: '' })
    expect(refused.stderr).toContain('CIDSYNC_SNAPSHOT_PASSPHRASE is set')
    expect(refused.stderr).toContain('carry the passphrase to the other device')
    expect(refused.stderr).toContain('[ERR_USAGE]')
  })

  it('key export > file open to others is refused with nothing written; --out makes it 0600; a pipe is left alone', async () => {
    const root = await useTempDir()
    await writeFile(join(root, 'x.toml'), `state_dir = "${join(root, 'state')}"\n`)
    const out = join(root, 'key.txt')
    // As a shell under umask 022 does it: the file is made 0644, then the command runs.
    const redirected = await new Promise<{ code: number | null, stderr: string }>(resolve => {
      const child = spawn('/bin/sh', ['-c', 'umask 022; exec "$0" "$1" key export --config "$2" > "$3"', process.execPath, CLI, join(root, 'x.toml'), out], { stdio: ['ignore', 'ignore', 'pipe'] })
      let stderr = ''
      child.stderr.on('data', (d: Buffer) => { stderr += d.toString() })
      child.on('close', code => resolve({ code, stderr }))
    })
    // A reader who opened the file before any chmod would keep reading: nothing is written to it.
    expect(redirected.code, redirected.stderr).toBe(2)
    expect(redirected.stderr).toContain('standard output is a file others may read (mode 644)')
    expect(redirected.stderr).toContain('Use --out FILE')
    expect(await readFile(out, 'utf8')).toBe('')
    const kept = join(root, 'kept.txt')
    const written = await runCli(['key', 'export', '--config', join(root, 'x.toml'), '--out', kept])
    expect(written.code, written.stderr).toBe(0)
    expect((await stat(kept)).mode & 0o777).toBe(0o600)
    const piped = await runCli(['key', 'export', '--config', join(root, 'x.toml')])
    expect(piped.stdout).toBe(await readFile(kept, 'utf8'))
  })

  it('init --key - takes the key from standard input instead of making one', async () => {
    const root = await useTempDir()
    await writeFile(join(root, 'old.toml'), '')
    const exported = (await runCli(['key', 'export', '--config', join(root, 'old.toml')], { env: { ...process.env, CIDSYNC_STATE_DIR: join(root, 'old') } })).stdout
    const init = await runCli(['init', '--config', join(root, 'c.toml'), '--state-dir', join(root, 'new'), '--key', '-'], { input: exported })
    expect(init.code).toBe(0)
    expect(init.stdout).toMatch(/snapshot key \S+ \(imported\)/)
    const again = (await runCli(['key', 'export', '--config', join(root, 'c.toml')])).stdout
    expect(again).toBe(exported)
  })

  it.runIf(hasScript)('key import on a terminal prompts and does not echo the key', async () => {
    const root = await useTempDir()
    await writeFile(join(root, 'x.toml'), '')
    const exported = (await runCli(['key', 'export', '--config', join(root, 'x.toml')], { env: { ...process.env, CIDSYNC_STATE_DIR: join(root, 'old') } })).stdout.trim()
    const command = `${process.execPath} ${CLI} key import --config ${join(root, 'x.toml')}`
    const child = spawn('script', ['-qec', command, '/dev/null'], { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, CIDSYNC_STATE_DIR: join(root, 'new') } })
    let stdout = ''
    child.stdout.on('data', (d: Buffer) => { stdout += d.toString() })
    const closed = new Promise(resolve => child.on('close', resolve))
    // Typed once the prompt shows (and echo is off), as a person would.
    await until(() => stdout.includes('it is not shown') || undefined, 20_000, 'the prompt')
    child.stdin.write(`${exported}\r`)
    await within(closed, 20_000, 'key import to end')
    const result = { stdout }
    expect(result.stdout).toContain('paste the key from `cidsync key export` (it is not shown)')
    expect(result.stdout).toContain('imported key ')
    expect(result.stdout).not.toContain(exported.slice(-20))
  })
})

describe('verify on a fresh device (the key and config, no index yet)', () => {
  it('runs the drill before any restore, says there is nothing local to compare, and leaves no state that would change key import', async () => {
    const root = await useTempDir()
    const env = { ...process.env, CIDSYNC_SERVICE_DIR: join(root, 'service'), CIDSYNC_STATUS_LISTEN: '127.0.0.1:0' }
    const { b } = await publishedAndCarried(root, env)

    const drill = await runCli(['verify', '--config', b], { env })
    expect(drill.code, drill.stderr).toBe(0)
    expect(drill.stdout).toMatch(/^restorable: \S+; 1 publish, 1 segment fetched and checked; (no stored files to bring back [^;]+|\d+ of \d+ stored contents? \(\d+ paths?\) brought back and verified[^;]*); no index on this device yet, so nothing local to compare/)
    const json = JSON.parse((await runCli(['verify', '--json', '--config', b], { env })).stdout) as { restorable: boolean, localIndex: boolean }
    expect(json).toMatchObject({ restorable: true, localIndex: false })
    const left = await readdir(join(root, 'b', 'state'))
    expect(left).not.toContain('index.sqlite')
    expect(left).not.toContain('sync.sqlite')
    expect(await readdir(join(root, 'b', 'state', 'snapshots'))).toEqual([])
    expect((await runCli(['restore', '--config', b], { env })).code).toBe(0)
  })
})
