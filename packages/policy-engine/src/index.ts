export * from './types.js';
export { parseCondition, conditionColumns } from './condition.js';
export { decide, describeDenial, type DecideInput } from './decide.js';
export { compileFilter, type CompileOptions } from './compile.js';
