import { isoTime } from '../util/iso-time.js'

/** Filecoin mainnet's genesis: epoch 0. The service makes its deals on mainnet. */
export const MAINNET_GENESIS_MS = Date.parse('2020-08-24T22:00:00Z')
/** One epoch (block time) on Filecoin. */
export const EPOCH_MS = 30_000

/** When a mainnet epoch starts, as an ISO time; undefined for no epoch or a nonsensical one. */
export function epochTime (epoch: number | undefined): string | undefined {
  if (epoch === undefined || !Number.isSafeInteger(epoch) || epoch < 0) return undefined
  const ms = MAINNET_GENESIS_MS + epoch * EPOCH_MS
  return isoTime(ms)
}

/** The mainnet epoch running at `ms` (the local service's deals use it, as production's do). */
export function epochAt (ms: number): number {
  return Math.floor((ms - MAINNET_GENESIS_MS) / EPOCH_MS)
}
