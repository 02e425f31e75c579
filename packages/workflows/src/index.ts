export * from './definition.js';
export { checkDefinition } from './check.js';
export { parseVariable, readVariable, buildStepInput, type Deprecation, legacyMappings, type Scope } from './variables.js';
export { isBundledLibrary, type LibraryDocument, libraryDocument } from './libraries.js';
export * from './concurrency.js';
export * from './engine.js';
export * from './store.js';
export * from './views.js';
export { resolveStfSteps, resolveEffectSteps, newestVersions } from './resolve.js';
export { type AcceptedVersions, type AcceptedVersionsView, acceptedVersions, acceptedVersionsView, AS_NAMED, boundSteps, definitionDigest, sameVersions, storedAccepted } from './accepted.js';
export { INSTANCE_ID, type InterruptedRuns, RunHeartbeat, type RunHeartbeatOptions, settleInterruptedRuns, sweepInterruptedRuns } from './liveness.js';
export { type EffectDelivery, effectIdempotencyKey, originOf, runOrigin } from './keys.js';
export { CHECKPOINT_MAX_BYTES, ProgressWriter, storedProgress } from './progress.js';
export {
  createStepRunners,
  FILE_SOURCE_MAX_BYTES,
  StepFailure,
  stepErrorOf,
  DATABASE_UNAVAILABLE,
  type WorkflowExecutionConfig,
  type WorkflowExecutionDeps,
} from './runners.js';
export { type ExecutionAudit, type ExecutionRequest, type RecordedRun, runOutput, type WithExecutions, WorkflowExecutions } from './execution.js';
export { cancelWorkflowRun, handleWorkflowRunJobs, queueWorkflowAs, requeueStaleRuns, resumeInterruptedRuns, WORKFLOW_RUNS_QUEUE, type WorkflowJobDeps } from './queued.js';
export { authorizeExecution, type ExecuteWorkflowRequest, type ExecutingMember, executeWorkflowAs } from './authorize.js';
export { type RerunOutcome, type RerunRequest, rerunWorkflowRunAs } from './rerun.js';
export {
  DEFAULT_STEP_DATA_MAX_BYTES,
  isCredentialName,
  joinStepData,
  REDACTED,
  boundedStepData,
  splitStepData,
  STEP_DATA_RUN_MAX_BYTES,
  type StepDataKeeper,
  stepDataKeeper,
  type StepRecordWithData,
  type StoredStepData,
  type TruncatedStepValue,
  truncatedValue,
} from './step-data.js';
export {
  checkSchedule,
  createSchedule,
  CreateScheduleSchema,
  deleteSchedule,
  fireDueSchedules,
  getSchedule,
  listSchedules,
  type ScheduleConfig,
  updateSchedule,
  UpdateScheduleSchema,
} from './schedules.js';
export {
  createHook,
  CreateHookSchema,
  deleteHook,
  deliverHook,
  type DeliveryResult,
  getHook,
  listHooks,
  pruneHookDeliveries,
  rotateHookSecret,
  type SecretSealer,
  updateHook,
  UpdateHookSchema,
  verifySignature,
} from './hooks.js';
export {
  createTrigger,
  CreateTriggerSchema,
  deleteTrigger,
  dispatchRowChanges,
  dispatchWorkflowEvents,
  documentChanged,
  emitWorkflowEvents,
  fileUploaded,
  getTrigger,
  listEvents,
  listTriggers,
  pruneRowChanges,
  replayEvent,
  type RowDispatchDeps,
  type TriggerConfig,
  updateTrigger,
  UpdateTriggerSchema,
  type WorkspaceEvent,
} from './triggers.js';
