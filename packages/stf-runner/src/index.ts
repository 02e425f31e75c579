export type { StfRunMetrics, StfRunnerConfig, StfRunnerDeps } from './deps.js';
export { runLimits } from './limits.js';
export { type RunAnswer, type RunnableVersion, type RunRequest, type RunWorkspace, StfDatabaseUnavailable, type UserRunRequest, runAsUser, runStf } from './run.js';
export { decodeStfCode } from './code.js';
export { type DescribableVersion, type StfDescription, describeStf, describeVersion } from './describe.js';
export { type InstantCodeRun, type InstantRun, instantRun, instantRunCode, UNSAVED_STF_ID } from './instant-run.js';
