export { exec } from './exec.js';
export type { ExecOptions, ExecResult } from './exec.js';
export { PathValidator } from './path-validator.js';
export { ToolgateError, TOOLGATE_ERROR_CODES, isToolgateErrorCode } from './errors.js';
export type { ToolgateErrorCode } from './errors.js';
export {
  APPROVAL_DECISIONS,
  approvalOf,
  approvalScopeKey,
  checkApprovalConfig,
  isBlocked,
  offeredTools,
  setApprovalScope,
  strictest,
  wrapWithDefaultApproval,
} from './approval.js';
export type { ApprovalConfig, ApprovalDecision, ApprovalInfo, ApprovalScope } from './approval.js';
export { named, toToolSet } from './named-tool.js';
export type { NamedTool } from './named-tool.js';
export { VERSION } from './package-root.js';
export { loadCustomTools } from './custom-module.js';
export type { LoadCustomToolsOptions, LoadCustomToolsResult } from './custom-module.js';
export { cliExecuteTool } from './tools/cli-execute.js';
export type { BinaryAvailability, CliExecuteGuardrails, CliExecuteInput, CliExecuteOptions, CliExecuteTool } from './tools/cli-execute.js';
export { readShellConfig, shellToolset } from './tools/shell.js';
export type { ShellInput, ShellRule, ShellToolsetOptions } from './tools/shell.js';
export { explainCommand } from './tools/explain-command.js';
export type { CommandExplanation, CommandLayer } from './tools/explain-command.js';
export { splitCommand } from './tools/split-command.js';
export type { CommandResult } from './tools/run-command.js';
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
export { loadWorker, loadWorkerSpec, workerJsonSchema } from './worker.js';
export type { LoadedWorker, LoadWorkerOptions, WorkerSpec } from './worker.js';
export { workerTools } from './tools/workers.js';
export * from './agent.js';
export { MODEL_PROVIDERS, modelIsCompatible, resolveModel } from './models.js';
export type { ResolveModelOptions } from './models.js';
