import { describe, expect, it } from 'vitest'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { safeDocument, safeLines, safeText } from '../../src/cli/safe-text.js'
import { DaemonProcess, runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'

/** What a hostile name carries: a window title set, the screen cleared, a forged line, a bidi override. */
const EVIL = 'a\x1b]0;pwned\x07\x1b[2J\rok\u202etxt.exe\x9b'
const SHOWN = 'a\\x1b]0;pwned\\x07\\x1b[2J\\x0dok\\u202etxt.exe\\x9b'
const RAW = /[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/

/** A preload that makes os.hostname() answer `name` in a child process (the ESM binding included). */
async function hostnamePreload (dir: string, name: string): Promise<string> {
  const path = join(dir, 'hostname.cjs')
  await writeFile(path, `const os = require('node:os'); os.hostname = () => ${JSON.stringify(name)}; require('node:module').syncBuiltinESMExports()\n`)
  return `--require ${path}`
}

describe('safe text', () => {
  it('shows C0, DEL, C1 and bidi controls visibly and leaves the rest alone', () => {
    expect(safeText(EVIL)).toBe(SHOWN)
    expect(safeText('a\nb\tc\x7f\u2066d')).toBe('a\\x0ab\\x09c\\x7f\\u2066d')
    expect(safeText('plain/ünïcode\\name 東京.md')).toBe('plain/ünïcode\\name 東京.md')
    expect(safeLines('one\x1b[2J\ntwo')).toBe('one\\x1b[2J\ntwo')
    expect(safeDocument({ a: [EVIL, 1, null], b: { c: '\x07' } })).toEqual({ a: [SHOWN, 1, null], b: { c: '\\x07' } })
  })

  it('ls, history and status print hostile names and hostnames escaped, and --json exact', async () => {
    const root = await useTempDir()
    await mkdir(join(root, 'notes', `dir${EVIL}`), { recursive: true })
    await writeFile(join(root, 'notes', `dir${EVIL}`, `file${EVIL}.md`), 'x')
    const config = join(root, 'c.toml')
    await writeFile(config, `state_dir = "state"\n[[folders]]\nname = "notes"\npath = "notes"\n[[folders]]\nname = "usb"\npath = ${JSON.stringify(`usb${EVIL}`)}\n` +
      `[service]\ndir = "${join(root, 'service')}"\n[status]\nlisten = "127.0.0.1:0"\n`)
    const env = { ...process.env, NODE_OPTIONS: await hostnamePreload(root, `host${EVIL}`) }

    // The usb folder is missing: published all the same, said on stderr (escaped), and exit 1.
    const snapshot = await runCli(['snapshot', '--config', config], { env, timeoutMs: 60_000 })
    expect(snapshot.code, snapshot.stderr).toBe(1)
    expect(snapshot.stderr).toContain('[ERR_FOLDERS_NOT_INDEXED]')
    expect(snapshot.stderr.split('\n').filter(line => !line.startsWith('{')).join('\n')).not.toMatch(RAW)
    const ls = await runCli(['ls', '--config', config], { env })
    expect(ls.code).toBe(0)
    expect(ls.stdout).not.toMatch(RAW)
    expect(ls.stdout).toContain(`notes/dir${SHOWN}/file${SHOWN}.md`)
    const json = JSON.parse((await runCli(['ls', '--json', '--config', config], { env })).stdout) as Array<{ path: string }>
    expect(json.map(e => e.path)).toEqual([`dir${EVIL}/file${EVIL}.md`])
    // A prefix matching nothing is echoed on stderr: escaped too.
    const none = await runCli(['ls', `x${EVIL}`, '--config', config], { env })
    expect(none.stderr).not.toMatch(RAW)
    expect(none.stderr).toContain(`nothing matches x${SHOWN}`)

    const history = await runCli(['history', '--config', config], { env, timeoutMs: 60_000 })
    expect(history.code, history.stderr).toBe(0)
    expect(history.stdout).not.toMatch(RAW)
    expect(history.stdout).toContain(`host${SHOWN}`)
    const historyJson = JSON.parse((await runCli(['history', '--json', '--config', config], { env, timeoutMs: 60_000 })).stdout) as Array<{ hostname: string }>
    expect(historyJson[0]?.hostname).toBe(`host${EVIL}`)

    const daemon = new DaemonProcess(['--config', config], { env })
    await daemon.logged('index current', 60_000)
    const status = await runCli(['status', '--config', config], { env })
    expect(status.stdout).not.toMatch(RAW)
    expect(status.stdout).toContain(`(host${SHOWN})`)
    expect(status.stdout).toContain(`usb${SHOWN}`)
    const check = await runCli(['status', '--check', '--config', config], { env })
    expect(check.code).toBe(1)
    expect(check.stderr).not.toMatch(RAW)
    expect(check.stderr).toContain(`usb${SHOWN}`)
    const statusJson = JSON.parse((await runCli(['status', '--json', '--config', config], { env })).stdout) as { device: { hostname: string } }
    expect(statusJson.device.hostname).toBe(`host${EVIL}`)
    await daemon.stop()
  }, 180_000)
})
