/**
 * `toolgate/temporal`: runs worker files on Temporal. Register `toolgateActivities(options)` and
 * `workflowsPath` on a `@temporalio/worker` `Worker`; start the `toolgateRun` workflow with a
 * `@temporalio/client` `Client`; answer approvals with the `toolgate.answer` update. See
 * docs/temporal.md.
 *
 * Importing `toolgate` never loads this module (nor Temporal).
 */
import { fileURLToPath } from 'node:url';
import { requireTemporal } from './require-temporal.js';

await requireTemporal();
const activities = await import('./activities.js');

/**
 * The activities of toolgate's workflow, for `Worker.create({ activities })`: loading a worker
 * file's plan, one model step, one gated tool call, and their bookkeeping. `options.model` is
 * decided on each worker host (an AI SDK model, a `provider:model` spec, or a function from the
 * worker file's model to one); other options as in `runWorker` (`audit`, `maxSteps`) and
 * `loadWorker` (`workDir`, `readonly`), plus the activities' timeouts.
 */
export const toolgateActivities: typeof activities.toolgateActivities = activities.toolgateActivities;

/**
 * The absolute path of toolgate's workflow module, for `Worker.create({ workflowsPath })`. It
 * exports the workflow type `toolgateRun`.
 */
// From source (tests, tsx) the module is the TypeScript file; Temporal's bundler compiles it too.
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
