export { runWorker, DEFAULT_MAX_STEPS, MAX_WORKER_DEPTH } from './run-worker.js';
export { ASK_QUESTION, CONVERSE, RESERVED_TOOL_NAMES, TASK_COMPLETION } from './loop-tools.js';
export type {
  ApprovalAnswer,
  ApprovalHandler,
  ApprovalRequest,
  CallDecision,
  RunEvent,
  RunnableWorker,
  RunStatus,
  RunUsage,
  RunWorkerOptions,
  StepRecord,
  ToolCallRecord,
  WorkerRunResult,
} from './types.js';
