/**
 * Running as a service: the systemd units and the launchd agent for this install, how to put them
 * in place and take them away, and what must hold for the service user to run them.
 */
export { planInstall, planUninstall, SYSTEM_UNIT_PATH, SYSTEM_STATE_DIR, SERVICE_USER, LAUNCH_AGENT_LABEL } from './plan.js'
export type { InstallInput, InstallPlan, Platform } from './plan.js'
export { checkSystemInstall, lookUpAccount, accessProblem } from './checks.js'
export type { ServiceAccount, InstallCheckInput } from './checks.js'
export { withSystemStateDir } from './state-dir.js'
