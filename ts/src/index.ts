export { exec } from './native/exec.js';
export type { ExecOptions, ExecResult } from './native/exec.js';
export { PathValidator } from './native/path-validator.js';
export { sandboxPolicy, sandboxSupport } from './native/sandbox.js';
export type { NetworkHosts, SandboxLimits, SandboxMode, SandboxOption, SandboxSummary, SandboxSupport } from './native/sandbox.js';
export { ToolgateError, TOOLGATE_ERROR_CODES, isToolgateErrorCode } from './native/errors.js';
export type { ToolgateErrorCode, ToolgateErrorLayer } from './native/errors.js';
export { LIMITS } from './native/constants.js';
export {
  APPROVAL_DECISIONS,
  approvalOf,
  attachApproval,
  checkApprovalConfig,
  commandWordsOf,
  isBlocked,
  offeredTools,
  setCommandWords,
  strictest,
  wrapWithDefaultApproval,
} from './approval/approval.js';
export type { ApprovalConfig, ApprovalDecision, ApprovalInfo, CommandWords, ResolvedApproval } from './approval/approval.js';
export { named, toToolSet } from './approval/named-tool.js';
export { bindTool, bindingOf } from './approval/tool-binding.js';
export type { ToolBinding } from './approval/tool-binding.js';
export type { NamedTool } from './approval/named-tool.js';
export { VERSION } from './native/package-root.js';
export { loadCustomTools } from './tools-module/load-custom-tools.js';
export type { LoadCustomToolsOptions, LoadCustomToolsResult } from './tools-module/load-custom-tools.js';
export { cliExecuteTool } from './toolsets/cli-execute.js';
export type { BinaryAvailability, CliExecuteGuardrails, CliExecuteInput, CliExecuteOptions, CliExecuteTool } from './toolsets/cli-execute.js';
export { readShellConfig, shellToolset } from './toolsets/shell.js';
export type { ShellInput, ShellRule, ShellToolsetOptions } from './toolsets/shell.js';
export { explainCommand } from './native/explain-command.js';
export type { CommandExplanation, CommandLayer } from './native/explain-command.js';
export { splitCommand } from './native/split-command.js';
export type { CommandResult } from './native/process-handle.js';
export { codeAgentTools, CODE_AGENT_DEFAULT_APPROVAL, CODE_AGENT_GROUPS } from './toolsets/code-agent.js';
export type { CodeAgentGroup, CodeAgentOptions } from './toolsets/code-agent.js';
export { filesystemToolset, FILESYSTEM_DEFAULT_APPROVAL } from './toolsets/filesystem.js';
export type { FilesystemOptions } from './toolsets/filesystem.js';
export { FileTools } from './native/file-tools.js';
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
  ProtectedPath,
  ReadOptions,
  ReadResult,
  TreeOptions,
  TreeResult,
  WriteResult,
} from './native/file-tools.js';
export {
  defaultToolDirectories,
  EXECUTABLE_TOOL_PREFIX,
  executableTool,
  executableTools,
  ExecutableToolRegistry,
} from './toolsets/executables.js';
export type {
  ExecutableToolDiagnostic,
  ExecutableToolDiscovery,
  ExecutableToolResult,
  ExecutableToolSpec,
  ExecutableToolsOptions,
  PreparedToolRun,
} from './toolsets/executables.js';
export { BUILTIN_TOOL_NAMES, BUILTINS_DEFAULT_APPROVAL, builtinsToolset } from './toolsets/builtins.js';
export type { BuiltinsOptions } from './toolsets/builtins.js';
export { CREATE_CUSTOM_TOOL_NAME, createCustomTool } from './toolsets/create-custom-tool.js';
export type { CreateCustomToolInput, CreateCustomToolOptions } from './toolsets/create-custom-tool.js';
export { loadWorker, loadWorkerSpec, workerJsonSchema } from './worker/load-worker.js';
export type { LoadedWorker, LoadWorkerOptions, WorkerSpec } from './worker/load-worker.js';
export { workerTools } from './toolsets/workers.js';
export type { WorkerToolsOptions } from './toolsets/workers.js';
export * from './worker/index.js';
export { MAX_XML_TOOL_CALL_BYTES, readToolBlock, xmlToolCalls, xmlToolPrompt } from './worker/xml-tool-calls.js';
export type { XmlToolCallsOptions } from './worker/xml-tool-calls.js';
export { anchorModelSpec, MODEL_PROVIDERS, modelIsCompatible, resolveModel } from './worker/models.js';
export type { ResolveModelOptions } from './worker/models.js';
export { loadScriptedModel, scriptedModel, scriptTurnIndex } from './model/scripted-model.js';
export type { ScriptedModelOptions } from './model/scripted-model.js';
export { checkScript, MAX_SCRIPT_BYTES, MAX_SCRIPT_CALLS_PER_TURN, MAX_SCRIPT_INPUT_DEPTH, MAX_SCRIPT_TURNS, parseScript } from './model/script.js';
export type { ModelScript, ScriptedExpect, ScriptedToolCall, ScriptedTurn } from './model/script.js';
export { mcpToolset } from './mcp/toolset.js';
export type { McpServerOptions, McpToolset, McpToolOutput, McpToolsetOptions } from './mcp/toolset.js';
export { serveMcp } from './mcp/serve.js';
export type { McpServing, ServeMcpHttp, ServeMcpOptions, ServeMcpTransport } from './mcp/serve.js';
