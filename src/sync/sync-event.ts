import type { Reconciled } from './reconcile.js'

/**
 * What the runner tells its owner as it works (the daemon turns these into `/events`). A plain
 * callback, so sync never imports the daemon.
 */
export type SyncEvent =
  | { readonly type: 'publish.started', readonly reason: string }
  | { readonly type: 'publish.step', readonly step: string, readonly merges: number }
  | { readonly type: 'publish.done', readonly reason: string, readonly cid: string, readonly entries: number, readonly merged: number, readonly skipped: boolean, readonly ms: number }
  | { readonly type: 'publish.failed', readonly reason: string, readonly message: string, readonly code: string | null }
  | ({ readonly type: 'reconcile.done', readonly ms: number } & Reconciled)
  | { readonly type: 'reconcile.failed', readonly message: string, readonly code: string | null }
  | { readonly type: 'drill', readonly ok: boolean, readonly cid: string, readonly failed: string | null, readonly segments: number }
  /** A mirror's copy loop changed course: the pointer moved there, copying failed, or worked again, or its pointer went astray. */
  | { readonly type: 'mirror', readonly mirror: string, readonly what: 'published' | 'failing' | 'recovered' | 'pointer', readonly cid: string | null, readonly message: string | null }

export type SyncEventListener = (event: SyncEvent) => void
