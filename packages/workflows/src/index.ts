export * from './definition.js';
export { checkDefinition } from './check.js';
export { parseVariable, readVariable, buildStepInput, type Scope } from './variables.js';
export * from './engine.js';
export * from './store.js';
export { resolveStfSteps, resolveEffectSteps } from './resolve.js';
export { INSTANCE_ID, RunHeartbeat, type RunHeartbeatOptions, sweepInterruptedRuns } from './liveness.js';
