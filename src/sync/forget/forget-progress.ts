import type { ProgressEvent } from '../../util/progress.js'

/** What a forget is doing: the chain read and planned, then each kept publish linked anew. */
export type ForgetProgress =
  | ProgressEvent<'forget:planned', { readonly kept: number, readonly forgotten: number }>
  | ProgressEvent<'forget:relinked', { readonly was: string, readonly cid: string }>
