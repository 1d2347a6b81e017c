/**
 * Mirrors: replicating this device's publishes and content to other services, their pointer,
 * their drills, and what status shows of them.
 */
export { mirrorBehind } from './behind.js'
export type { MirrorBehind } from './behind.js'
export { logIndexContent } from './content.js'
export { drillMirror } from './drill.js'
export type { MirrorDrillComponents, MirrorDrillOptions } from './drill.js'
export { DEFAULT_MIRROR_TIMING, MirrorReplicator, mirrorAdvice } from './replicator.js'
export type { MirrorLink, MirrorPointerNote, MirrorTiming, ReplicatorState } from './replicator.js'
export { mirrorStatus } from './status.js'
export type { MirrorStatus } from './status.js'
