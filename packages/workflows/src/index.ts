export * from './definition.js';
export { checkDefinition } from './check.js';
export { parseVariable, readVariable, buildStepInput, type Scope } from './variables.js';
export * from './engine.js';
export * from './store.js';
export { resolveStfSteps, resolveEffectSteps } from './resolve.js';
export { INSTANCE_ID, RunHeartbeat, type RunHeartbeatOptions, sweepInterruptedRuns } from './liveness.js';
export {
  createStepRunners,
  FILE_SOURCE_MAX_BYTES,
  StepFailure,
  stepErrorOf,
  type WorkflowExecutionConfig,
  type WorkflowExecutionDeps,
} from './runners.js';
export { executeAndRecord, type ExecutionAudit, type ExecutionRequest, type RecordedRun, runOutput, WorkflowExecutions } from './execution.js';
export { authorizeExecution, type ExecuteWorkflowRequest, type ExecutingMember, executeWorkflowAs } from './authorize.js';
