export type * from './types.js';
export { CONDITION_JSON_SCHEMA, MAX_IN_ITEMS, MAX_VALUE_CHARS, conditionColumns, parseCondition } from './condition.js';
export { type DecideInput, conditionFilterOf, decide, describeDenial, matchingPolicies } from './decide.js';
export { type CompileOptions, compileFilter } from './compile.js';
