import type { Command } from 'commander'
import type { Config } from '../config/index.js'
import { loadConfig } from '../config/index.js'
import type { ServiceConnection } from '../connect/index.js'

/** Adds the options every service command takes. */
export function serviceOptions (command: Command): Command {
  return command.option('--config <path>', 'config file').option('--json', 'print JSON')
}

/** Loads the config, reaches the service it names (starting the embedded one if so), runs `fn`, closes. */
export async function withService<T> (options: { config?: string }, fn: (connection: ServiceConnection, config: Config) => Promise<T>): Promise<T> {
  const config = loadConfig({ configPath: options.config })
  const { connectService } = await import('../connect/index.js')
  const connection = await connectService(config)
  try {
    return await fn(connection, config)
  } finally {
    await connection.close()
  }
}
