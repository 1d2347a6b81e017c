import { describe, expect, it } from 'vitest'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { loadConfig, renderConfigTemplate, DEFAULT_RETENTION_SCHEDULE } from '../../src/config/index.js'
import { ConfigError } from '../../src/errors.js'
import { parseDuration, systemTimeZone } from '../../src/retention/index.js'
import { useTempDir } from '../helpers/temp-dir.js'

async function load (text: string, env: NodeJS.ProcessEnv = {}): Promise<ReturnType<typeof loadConfig>> {
  const path = join(await useTempDir(), 'config.toml')
  await writeFile(path, text)
  return loadConfig({ configPath: path, env, home: '/home/u' })
}

async function problem (text: string): Promise<string> {
  try {
    await load(text)
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError)
    return (err as ConfigError).message
  }
  throw new Error(`expected a config error for ${text}`)
}

describe('[retention] in the config', () => {
  it('is absent unless the file has the table: every publish is kept, and no variable turns it on', async () => {
    expect((await load('')).retention).toBeUndefined()
    expect((await load('[snapshot]\ndeal = false\n')).retention).toBeUndefined()
    // Deleting is never switched on from the environment alone.
    expect((await load('', { CIDSYNC_RETENTION_KEEP_DAILY: '3' })).retention).toBeUndefined()
  })

  it('reads what `init` writes: a policy, a weekly schedule, a day\'s margin and the system\'s zone', async () => {
    expect((await load(renderConfigTemplate())).retention).toEqual({
      policy: { keepLast: 0, keepHourly: 24, keepDaily: 14, keepWeekly: 8, keepMonthly: 24, keepYearly: 10, keepWithin: parseDuration('48h') },
      pruneMarginSeconds: 86_400,
      schedule: DEFAULT_RETENTION_SCHEDULE,
      timeZone: systemTimeZone(),
      systemZone: true
    })
  })

  it('takes every key, a zero margin and a named zone', async () => {
    const retention = (await load('[retention]\nkeep_last = 3\nkeep_hourly = 0\nkeep_daily = 7\nkeep_weekly = 4\nkeep_monthly = 6\nkeep_yearly = 2\nkeep_within = "1y2m"\nprune_margin = "0s"\nschedule = "0 3 * * *"\ntime_zone = "Asia/Tokyo"\n')).retention
    expect(retention).toEqual({
      policy: { keepLast: 3, keepHourly: 0, keepDaily: 7, keepWeekly: 4, keepMonthly: 6, keepYearly: 2, keepWithin: parseDuration('1y2m') },
      pruneMarginSeconds: 0,
      schedule: '0 3 * * *',
      timeZone: 'Asia/Tokyo'
    })
    expect((await load('[retention]\nkeep_within = "30d"\nprune_margin = "36h"\n')).retention).toMatchObject({ policy: { keepDaily: 0, keepWithin: parseDuration('30d') }, pruneMarginSeconds: 129_600 })
  })

  it('refuses a table that keeps nothing, rather than forgetting every publish', async () => {
    for (const text of ['[retention]\n', '[retention]\nschedule = "0 3 * * *"\n', '[retention]\nkeep_daily = 0\nkeep_within = "0s"\n']) {
      const message = await problem(text)
      expect(message).toContain('[retention] keeps nothing')
      expect(message).toContain('remove [retention] to keep every publish')
    }
  })

  it('refuses counts that are not whole numbers of 0 or more, each named with its value and file', async () => {
    for (const [value, says] of [['-1', 'expected at least 0'], ['1.5', 'expected a whole number'], ['"7"', 'expected a number'], ['1000001', 'expected at most 1000000']] as const) {
      const message = await problem(`[retention]\nkeep_daily = ${value}\n`)
      expect(message, value).toMatch(/retention\.keep_daily = .* \(in .*config\.toml\)/)
      expect(message, value).toContain(says)
    }
  })

  it('refuses a duration it cannot read strictly, and a margin counted in months or years', async () => {
    for (const value of ['48', '48x', '2m1y', '1.5d', '', '200y', '1 d']) {
      const message = await problem(`[retention]\nkeep_daily = 1\nkeep_within = ${JSON.stringify(value)}\n`)
      expect(message, value).toContain(`retention.keep_within = ${JSON.stringify(value)}`)
      expect(message, value).toContain('expected a duration such as "48h", "30d", "2w" or "1y2m"')
    }
    expect(await problem('[retention]\nkeep_daily = 1\nprune_margin = "1m"\n')).toContain('retention.prune_margin = "1m" (in ')
    expect(await problem('[retention]\nkeep_daily = 1\nprune_margin = "1m"\n')).toContain('expected an exact span without years or months')
    expect(await problem('[retention]\nkeep_daily = 1\nprune_margin = "soon"\n')).toContain('expected a duration')
  })

  it('refuses a schedule that is not a cron expression, and a zone that is not an IANA name', async () => {
    expect(await problem('[retention]\nkeep_daily = 1\nschedule = "weekly"\n')).toContain('retention.schedule = "weekly"')
    for (const zone of ['Mars/Olympus', '+01:00', '']) {
      const message = await problem(`[retention]\nkeep_daily = 1\ntime_zone = ${JSON.stringify(zone)}\n`)
      expect(message, zone).toContain('expected an IANA time zone name')
    }
  })

  it('names the allowed keys beside an unknown one', async () => {
    const message = await problem('[retention]\nkeep_dayly = 7\n')
    expect(message).toContain('unknown key retention.keep_dayly')
    expect(message).toContain('keep_last, keep_hourly, keep_daily, keep_weekly, keep_monthly, keep_yearly, keep_within, prune_margin, schedule, time_zone')
  })
})
