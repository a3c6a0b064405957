export { runWorker, resumeWorker, DEFAULT_MAX_STEPS, MAX_WORKER_DEPTH } from './run-worker.js';
export { streamWorker, streamResumedWorker } from './stream-worker.js';
export type { WorkerStream } from './stream-worker.js';
export { toAgentSettings } from './agent-settings.js';
export type { AgentSettingsOptions, WorkerAgentSettings } from './agent-settings.js';
export { alwaysScope } from '../approval/always.js';
export { ASK_QUESTION, CONVERSE, RESERVED_TOOL_NAMES, TASK_COMPLETION } from './loop-tools.js';
export { NETWORK_TOOL } from '../run/network.js';
export type { NetworkRequestInput } from '../run/network.js';
export type {
  AlwaysScope,
  AlwaysScopeChoice,
  ApprovalAnswer,
  ApprovalAnswers,
  ApprovalContext,
  ApprovalHandler,
  ApprovalRequest,
  AuditOptions,
  CallDecision,
  DecidedBy,
  NetworkConnectionRecord,
  PendingApproval,
  ResumeWorkerOptions,
  RunEvent,
  RunnableWorker,
  RunStatus,
  RunUsage,
  RunWorkerOptions,
  SavedBy,
  SavedRule,
  SaveOffer,
  StepRecord,
  ToolCallRecord,
  WorkerRunResult,
} from './types.js';
