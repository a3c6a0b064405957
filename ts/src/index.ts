export { exec } from './exec.js';
export type { ExecOptions, ExecResult } from './exec.js';
export { PathValidator } from './path-validator.js';
export { ToolgateError, TOOLGATE_ERROR_CODES, isToolgateErrorCode } from './errors.js';
export type { ToolgateErrorCode } from './errors.js';
export { VERSION } from './package-root.js';
