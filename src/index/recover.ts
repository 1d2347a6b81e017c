import { existsSync, renameSync } from 'node:fs'
import { IndexDamagedError } from '../errors.js'
import { openIndex, type Index } from './open-index.js'
import { LEAN_CACHE_KIB } from './open.js'

/** What opening the daemon's index found. */
export interface OpenedIndex {
  readonly index: Index
  /** No index was there: made empty (the first start, or a file lost since). */
  readonly created: boolean
  /** The file was damaged: moved aside to `movedTo` and made afresh. */
  readonly damaged: { readonly problem: string, readonly movedTo: string } | undefined
  /** Why the rows it held are gone (missing, or damaged), if they are: what the sync start-up weighs against its history. */
  readonly lost: string | undefined
}

/** `index.sqlite.damaged-2026-11-22T09-15-00-000Z`: sorts by time, never matched by our leftover cleanup. */
export function damagedName (path: string, at = new Date()): string {
  return `${path}.damaged-${at.toISOString().replace(/[:.]/g, '-')}`
}

/** Moves a damaged SQLite file and its side files aside under one time-stamped name; answers it. */
export function moveAside (path: string): string {
  const target = damagedName(path)
  for (const suffix of ['-wal', '-shm', '-journal', '']) {
    if (existsSync(`${path}${suffix}`)) renameSync(`${path}${suffix}`, `${target}${suffix}`)
  }
  return target
}

/**
 * Opens the daemon's index; one that is damaged (not a database, a failed quick check) is never
 * written on: it is kept aside with the time in its name and a fresh one made, which the normal
 * scan fills from the folders. The caller says so. Its page cache is held to {@link LEAN_CACHE_KIB}.
 */
export function openIndexRecovering (path: string): OpenedIndex {
  const created = !existsSync(path)
  try {
    return { index: openIndex(path, { cacheKiB: LEAN_CACHE_KIB }), created, damaged: undefined, lost: created ? 'it was missing' : undefined }
  } catch (err) {
    if (!(err instanceof IndexDamagedError)) throw err
    const movedTo = moveAside(path)
    return { index: openIndex(path, { cacheKiB: LEAN_CACHE_KIB }), created: false, damaged: { problem: err.problem, movedTo }, lost: `it was damaged (${err.problem})` }
  }
}
