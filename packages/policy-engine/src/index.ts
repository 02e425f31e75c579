export type * from './types.js';
export { conditionColumns, parseCondition } from './condition.js';
export { type DecideInput, decide, describeDenial } from './decide.js';
export { type CompileOptions, compileFilter } from './compile.js';
