import { execFileSync } from 'node:child_process'
import { readFileSync, rmSync, statSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import type { Command } from 'commander'
import { findConfigFile, loadConfig } from '../../config/index.js'
import { UsageError } from '../../errors.js'
import { writeFileAtomicSync } from '../../util/atomic-write.js'
import { action } from '../run.js'

interface ServiceOptions { config?: string, user?: boolean, dryRun?: boolean, platform?: string }

function platformOf (option: string | undefined): 'linux' | 'darwin' {
  const platform = option ?? process.platform
  if (platform !== 'linux' && platform !== 'darwin') throw new UsageError(`no service manager for ${platform}: cidsync installs systemd units (linux) and launchd agents (darwin)`)
  return platform
}

function show (commands: ReadonlyArray<readonly string[]>): string {
  return commands.map(c => c.map(a => /[\s'"]/.test(a) ? `'${a.replace(/'/g, '\'\\\'\'')}'` : a).join(' ')).join('\n')
}

function run (commands: ReadonlyArray<readonly string[]>): void {
  for (const [file, ...args] of commands) {
    process.stdout.write(`$ ${show([[file as string, ...args]])}\n`)
    execFileSync(file as string, args, { stdio: 'inherit' })
  }
}

export function registerService (program: Command): void {
  const service = program.command('service').description('run cidsync as a service: systemd (linux) or launchd (macOS)')
  service.command('install')
    .description('write the unit or agent with this install\'s paths, enable and start it')
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
      const cli = fileURLToPath(new URL('../main.js', import.meta.url))
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
      writeFileAtomicSync(plan.path, plan.content, { mode: 0o644 })
      process.stdout.write(`wrote ${plan.path}\n`)
      run(plan.commands)
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
      run(plan.commands)
      rmSync(plan.path, { force: true })
      process.stdout.write(`removed ${plan.path}\n`)
      run(plan.after ?? [])
    }))
}
