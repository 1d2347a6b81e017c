import { existsSync, lstatSync, readFileSync, readlinkSync, rmSync, statSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Command } from 'commander'
import { findConfigFile, loadConfig } from '../../config/index.js'
import { ServiceManagerError, UsageError } from '../../errors.js'
import { cliScript } from '../../package-root.js'
import { writeFileAtomicSync } from '../../util/atomic-write.js'
import { action } from '../run.js'
import { runCommands, showCommands as show, userManagerProblem } from '../service-manager.js'

interface ServiceOptions { config?: string, user?: boolean, dryRun?: boolean, platform?: string }

function platformOf (option: string | undefined): 'linux' | 'darwin' {
  const platform = option ?? process.platform
  if (platform !== 'linux' && platform !== 'darwin') throw new UsageError(`no service manager for ${platform}: cidsync installs systemd units (linux) and launchd agents (darwin)`)
  return platform
}

/** `systemctl enable` links the unit from default.target.wants: gone with the unit, or it dangles. */
function removeWantsLink (unitPath: string): void {
  const link = join(dirname(unitPath), 'default.target.wants', 'cidsync.service')
  try {
    if (lstatSync(link).isSymbolicLink() && readlinkSync(link) === unitPath) rmSync(link)
  } catch { /* no link */ }
}

const SERVICE_INSTALL_HELP = `
Where it goes:
On Linux, a systemd unit: a system one, or a user one with --user.
On macOS, a launchd agent, which runs as your user.
--dry-run prints the file and the commands, and changes nothing.
docs/operations.md says what the units do, and how to install by hand.`

export function registerService (program: Command): void {
  const service = program.command('service').description('run cidsync as a service: systemd (linux) or launchd (macOS)')
  service.command('install')
    .description('write the unit or agent with this install\'s paths, enable and start it')
    .addHelpText('after', SERVICE_INSTALL_HELP)
    .option('--config <path>', 'the config the service runs with (default: the one found now)')
    .option('--user', 'a per-user service (systemd --user; launchd agents always are)')
    .option('--dry-run', 'print the file and the commands instead')
    .option('--platform <linux|darwin>', 'plan for another platform (with --dry-run)')
    .action(action(async (options: ServiceOptions) => {
      const platform = platformOf(options.platform)
      const configPath = options.config ?? findConfigFile()?.path
      if (configPath === undefined) throw new UsageError('no config to run with: create one with `cidsync init`, or give --config')
      const dryRun = options.dryRun === true
      if (!dryRun && options.platform !== undefined && options.platform !== process.platform) throw new UsageError('--platform other than this one needs --dry-run')
      const install = await import('../../install/index.js')
      const system = platform === 'linux' && options.user !== true
      const cli = fileURLToPath(cliScript())
      let config = loadConfig({ configPath })
      const source = config.source ?? configPath
      if (system) {
        // One state for the daemon and the administrator's CLI: the config names it.
        const edited = install.withSystemStateDir(readFileSync(source, 'utf8'))
        if (edited !== undefined && dryRun) {
          process.stdout.write(`# ${source} gets, first: state_dir = "${install.SYSTEM_STATE_DIR}"\n`)
          config = { ...config, stateDir: install.SYSTEM_STATE_DIR }
        } else if (edited !== undefined) {
          writeFileAtomicSync(source, edited, { mode: statSync(source).mode & 0o777 })
          process.stdout.write(`added state_dir = "${install.SYSTEM_STATE_DIR}" to ${source}\n`)
          config = loadConfig({ configPath: source })
        }
        const checks = install.checkSystemInstall({ node: process.execPath, cli, config: source, folders: config.folders.map(f => f.path), account: install.lookUpAccount(install.SERVICE_USER) })
        for (const warning of checks.warnings) process.stderr.write(`cidsync: warning: ${warning}\n`)
        if (checks.problems.length > 0 && !dryRun) throw new UsageError(`the service could not start as user ${install.SERVICE_USER}:\n  ${checks.problems.join('\n  ')}`)
        for (const problem of checks.problems) process.stdout.write(`# problem: ${problem}\n`)
      }
      const { credentialsDir } = await import('../../connect/index.js')
      const plan = install.planInstall({
        platform, user: options.user === true, node: process.execPath, cli,
        config: source, folders: config.folders.map(f => f.path), credentialsDir: credentialsDir(config), stateDir: config.stateDir
      })
      if (dryRun) {
        process.stdout.write(`# ${plan.path}\n${plan.content}\n# then:\n${show(plan.commands)}\n`)
        return
      }
      const userUnit = platform === 'linux' && options.user === true
      const problem = userUnit ? userManagerProblem() : undefined
      if (problem !== undefined) throw new ServiceManagerError(`cannot install the user service, nothing was written: ${problem}`)
      const existed = existsSync(plan.path)
      writeFileAtomicSync(plan.path, plan.content, { mode: 0o644 })
      process.stdout.write(`wrote ${plan.path}\n`)
      try {
        runCommands(plan.commands, 'fix that, then run `cidsync service install` again')
      } catch (err) {
        // A unit no manager took is a half install: leave the machine as it was (one that was there stays).
        if (!existed) {
          rmSync(plan.path, { force: true })
          process.stderr.write(`cidsync: removed ${plan.path} again\n`)
        }
        throw err
      }
    }))
  service.command('uninstall')
    .description('stop and disable the service, and remove its file')
    .option('--user', 'the per-user service')
    .option('--dry-run', 'print the commands instead')
    .option('--platform <linux|darwin>', 'plan for another platform (with --dry-run)')
    .action(action(async (options: ServiceOptions) => {
      const platform = platformOf(options.platform)
      const { planUninstall } = await import('../../install/index.js')
      const plan = planUninstall(platform, options.user === true)
      if (options.dryRun === true) {
        process.stdout.write(`${show(plan.commands)}\nrm ${plan.path}\n${show(plan.after ?? [])}\n`)
        return
      }
      const problem = platform === 'linux' && options.user === true ? userManagerProblem() : undefined
      if (problem !== undefined) {
        // No user manager means nothing runs under the unit: removing the files is the whole uninstall.
        rmSync(plan.path, { force: true })
        removeWantsLink(plan.path)
        process.stdout.write(`removed ${plan.path} (no systemd user manager runs for this login, so nothing was running under it to stop)\n`)
        return
      }
      runCommands(plan.commands, 'the unit file is still in place: fix that, then run `cidsync service uninstall` again')
      rmSync(plan.path, { force: true })
      process.stdout.write(`removed ${plan.path}\n`)
      runCommands(plan.after ?? [], `${plan.path} is removed; the service manager still lists it until it reloads`)
    }))
}
