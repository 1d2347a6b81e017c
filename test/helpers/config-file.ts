import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { stringify } from 'smol-toml'
import type { z } from 'zod'
import { configFileSchema } from '../../src/config/schema.js'

/** A config file as written (TOML's keys, before defaults): what the config room's schema reads. */
export type ConfigFileInput = z.input<typeof configFileSchema>

/**
 * Sections a test changes: each merged key by key over the usual one (a key given as undefined
 * is left out, so its default applies); `folders` replaces the list.
 */
export type TestConfigOptions = { readonly [K in keyof ConfigFileInput]?: ConfigFileInput[K] }

/**
 * The config most tests start from: state in `state`, one folder `notes` at `notes` (both beside
 * the file), the status endpoint on a free loopback port, a short settle time.
 */
export const USUAL_CONFIG: ConfigFileInput = {
  state_dir: 'state',
  folders: [{ name: 'notes', path: 'notes' }],
  status: { listen: '127.0.0.1:0' },
  watch: { settle_ms: 20 }
}

/** `options` over {@link USUAL_CONFIG}, section by section. */
export function testConfig (options: TestConfigOptions = {}): ConfigFileInput {
  const merged: Record<string, unknown> = { ...USUAL_CONFIG }
  for (const [key, value] of Object.entries(options)) {
    const usual = merged[key]
    const isSection = typeof value === 'object' && value !== null && !Array.isArray(value) && typeof usual === 'object' && usual !== null && !Array.isArray(usual)
    merged[key] = isSection ? withoutUndefined({ ...usual, ...value }) : value
  }
  return withoutUndefined(merged) as ConfigFileInput
}

function withoutUndefined (section: object): Record<string, unknown> {
  return Object.fromEntries(Object.entries(section).filter(([, v]) => v !== undefined))
}

/**
 * The config as TOML, checked first against the config room's own schema: a key a test
 * misspells fails here, naming the key, rather than as a daemon that will not start.
 */
export function configToml (config: ConfigFileInput): string {
  configFileSchema.parse(config)
  return stringify(config)
}

/** Writes {@link testConfig}`(options)` to `dir/name` (`config.toml`); answers the file's path. */
export async function writeTestConfig (dir: string, options: TestConfigOptions = {}, name = 'config.toml'): Promise<string> {
  const path = join(dir, name)
  await writeFile(path, configToml(testConfig(options)))
  return path
}
