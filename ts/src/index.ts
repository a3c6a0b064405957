export { exec } from './exec.js';
export type { ExecOptions, ExecResult } from './exec.js';
export { PathValidator } from './path-validator.js';
export { ToolgateError, TOOLGATE_ERROR_CODES, isToolgateErrorCode } from './errors.js';
export type { ToolgateErrorCode } from './errors.js';
export {
  APPROVAL_DECISIONS,
  approvalOf,
  isBlocked,
  offeredTools,
  strictest,
  wrapWithDefaultApproval,
} from './approval.js';
export type { ApprovalConfig, ApprovalDecision, ApprovalInfo } from './approval.js';
export { named, toToolSet } from './named-tool.js';
export type { NamedTool } from './named-tool.js';
export { VERSION } from './package-root.js';
export {
  defaultToolDirectories,
  EXECUTABLE_TOOL_PREFIX,
  executableTool,
  executableTools,
  ExecutableToolRegistry,
} from './tools/executables.js';
export type {
  ExecutableToolDiagnostic,
  ExecutableToolDiscovery,
  ExecutableToolResult,
  ExecutableToolSpec,
  ExecutableToolsOptions,
  PreparedToolRun,
} from './tools/executables.js';
export { CREATE_CUSTOM_TOOL_NAME, createCustomTool } from './tools/create-custom-tool.js';
export type { CreateCustomToolInput, CreateCustomToolOptions } from './tools/create-custom-tool.js';
