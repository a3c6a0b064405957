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
export { codeAgentTools, CODE_AGENT_DEFAULT_APPROVAL, CODE_AGENT_GROUPS } from './tools/code-agent.js';
export type { CodeAgentGroup, CodeAgentOptions } from './tools/code-agent.js';
export { filesystemToolset, FILESYSTEM_DEFAULT_APPROVAL } from './tools/filesystem.js';
export type { FilesystemOptions } from './tools/filesystem.js';
export { FileTools } from './tools/file-tools.js';
export type {
  DeleteResult,
  EditOptions,
  EditResult,
  ExistsResult,
  FileInfoResult,
  GlobOptions,
  GlobResult,
  GrepOptions,
  GrepResult,
  PatchOperation,
  PatchResult,
  ReadOptions,
  ReadResult,
  TreeOptions,
  TreeResult,
  WriteResult,
} from './tools/file-tools.js';
