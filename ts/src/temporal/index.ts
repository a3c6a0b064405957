/**
 * `toolgate/temporal`: runs worker files on Temporal. Register `toolgateActivities(options)` and
 * `workflowsPath` on a `@temporalio/worker` `Worker`; start the `toolgateRun` workflow with a
 * `@temporalio/client` `Client`; answer approvals with the `toolgate.answer` update. See
 * docs/temporal.md.
 *
 * Importing `toolgate` never loads this module (nor Temporal).
 */
// First: without the Temporal SDK this throws one line, before anything else loads.
import './require-temporal.js';
import { fileURLToPath } from 'node:url';

export { toolgateActivities } from './activities.js';

// From source (tests, tsx) the module is the TypeScript file; Temporal's bundler compiles it too.
/**
 * The absolute path of toolgate's workflow module, for `Worker.create({ workflowsPath })`. It
 * exports the workflow type `toolgateRun`.
 */
export const workflowsPath: string = fileURLToPath(new URL(import.meta.url.endsWith('.ts') ? './workflows.ts' : './workflows.js', import.meta.url));

export { ANSWER_UPDATE, PENDING_QUERY, TOOLGATE_RUN } from './contract.js';
export { MAX_ANSWER_REASON_CHARS } from './answers.js';
export { MAX_REVIEWABLE_INPUT_BYTES } from './model-step.js';
export type { ModelForWorker, ToolgateActivitiesOptions } from './activities.js';
export type {
  DurationText,
  PendingToolCall,
  ToolgateActivityFunctions,
  ToolgateAnswer,
  ToolgateAnswerResult,
  ToolgateAnswers,
  ToolgateRunInput,
  ToolgateRunResult,
} from './contract.js';
