/** Forget: the retention policy applied to the pointer's chain, which is linked anew without the forgotten publishes. */
export { forget } from './forget.js'
export type { ForgetInit, ForgetProgress, Forgotten } from './forget.js'
export { planForget } from './forget-plan.js'
export type { ChainPublish, ForgetPlan, PlanInit } from './forget-plan.js'
