/**
 * Running as a service: the systemd units and the launchd agent for this install, and how to put
 * them in place and take them away.
 */
export { planInstall, planUninstall, SYSTEM_UNIT_PATH, LAUNCH_AGENT_LABEL } from './plan.js'
export type { InstallInput, InstallPlan, Platform } from './plan.js'
