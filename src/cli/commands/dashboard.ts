import { spawn } from 'node:child_process'
import type { Command } from 'commander'
import { loadConfig, parseListenAddress } from '../../config/index.js'
import { DashboardUnavailableError } from '../../errors.js'
import { action } from '../run.js'

/** The program that hands a URL to the desktop's browser, where there is one. */
function opener (): { command: string, why?: string } {
  if (process.platform === 'darwin') return { command: 'open' }
  if (process.platform === 'win32') return { command: 'explorer.exe' }
  if ((process.env.DISPLAY ?? '') === '' && (process.env.WAYLAND_DISPLAY ?? '') === '') return { command: 'xdg-open', why: 'no graphical session here (neither DISPLAY nor WAYLAND_DISPLAY is set)' }
  return { command: 'xdg-open' }
}

/** Hands the URL to the browser; answers why not when it cannot (never fails the command: the link is printed). */
async function openInBrowser (url: string): Promise<string | undefined> {
  const { command, why } = opener()
  if (why !== undefined) return why
  return await new Promise(resolve => {
    const child = spawn(command, [url], { stdio: 'ignore', detached: true })
    child.once('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'ENOENT' ? `${command} is not installed` : `${command} failed: ${err.message}`))
    child.once('spawn', () => { child.unref(); resolve(undefined) })
  })
}

const DASHBOARD_HELP = `
Signing in:
Reading the dashboard needs nothing; its buttons (publish, reconcile, verify) need a sign-in.
Run this command as the user the daemon runs as: it asks the daemon with the state dir's token.
The link works once, for two minutes, and keeps that browser signed in for two hours.
--open hands the link to the desktop's browser (xdg-open, or open on macOS).
A status endpoint on a unix socket has no dashboard: a browser cannot open a socket.
docs/operations.md, "The dashboard and the event stream", says more.`

export function registerDashboard (program: Command): void {
  program.command('dashboard')
    .description('print the dashboard\'s URL with a one-time login link (works once, for two minutes) that lets this browser use its buttons')
    .addHelpText('after', DASHBOARD_HELP)
    .option('--config <path>', 'config file')
    .option('--open', 'open the link in the browser too, where there is one')
    .action(action(async (options: { config?: string, open?: boolean }) => {
      const config = loadConfig({ configPath: options.config })
      const { postToDaemon, statusAddress } = await import('../status-client.js')
      const where = statusAddress(config)
      const address = parseListenAddress(where)
      if ('error' in address || address.kind === 'unix') {
        throw new DashboardUnavailableError(`the status endpoint listens on ${where}, which a browser cannot open: set [status] listen = "127.0.0.1:7345" (a loopback address and port) and restart the daemon`)
      }
      // The code is minted with the state dir's token, which only this user can read.
      const { code, expiresAt } = JSON.parse(await postToDaemon(config, '/login-code', 10_000, 10_000)) as { code: string, expiresAt: string }
      const base = `http://${address.host.includes(':') ? `[${address.host}]` : address.host}:${address.port}`
      const link = `${base}/login?code=${encodeURIComponent(code)}`
      process.stdout.write(`${link}\n`)
      process.stderr.write(`cidsync: the link signs one browser in to press the buttons (it works once, until ${expiresAt}); reading ${base}/ needs no sign-in\n`)
      if (options.open === true) {
        const why = await openInBrowser(link)
        if (why !== undefined) process.stderr.write(`cidsync: not opened: ${why}; open the link above by hand\n`)
      }
    }))
}
