import { execFileSync } from 'node:child_process'
import { rmSync } from 'node:fs'
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
      const config = loadConfig({ configPath })
      const { planInstall } = await import('../../install/index.js')
      const { credentialsDir } = await import('../../connect/index.js')
      const plan = planInstall({
        platform, user: options.user === true, node: process.execPath, cli: fileURLToPath(new URL('../main.js', import.meta.url)),
        config: config.source ?? configPath, folders: config.folders.map(f => f.path), credentialsDir: credentialsDir(config)
      })
      if (options.dryRun === true) {
        process.stdout.write(`# ${plan.path}\n${plan.content}\n# then:\n${show(plan.commands)}\n`)
        return
      }
      if (options.platform !== undefined && options.platform !== process.platform) throw new UsageError('--platform other than this one needs --dry-run')
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
        process.stdout.write(`${show(plan.commands)}\nrm ${plan.path}\n`)
        return
      }
      run(plan.commands)
      rmSync(plan.path, { force: true })
      process.stdout.write(`removed ${plan.path}\n`)
    }))
}
