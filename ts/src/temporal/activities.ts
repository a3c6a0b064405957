import { realpathSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { isAbsolute } from 'node:path';
import type { LanguageModel } from 'ai';
import { native } from '../native/binding.js';
import { callNative, ToolgateError } from '../native/errors.js';
import { PathValidator } from '../native/path-validator.js';
import { ApprovalGate } from '../run/approval-gate.js';
import { AuditTrail } from '../run/audit.js';
import { NetworkApprovals } from '../run/network.js';
import { Recorder } from '../run/records.js';
import type { RunEvent } from '../run/types.js';
import { auditTarget, checkInput, prepareRun, type RunSetup } from '../worker/run-loop.js';
import { runContext } from '../worker/run-context.js';
import type { AlwaysScope, AuditOptions } from '../worker/types.js';
import type { ActivityTimeouts, DurationText, RunPlan, RunRef, ToolgateActivityFunctions } from './contract.js';
import { HostedWorkers, type HostedWorker } from './hosted-workers.js';
import { modelStep } from './model-step.js';
import { recordLostCall, runToolCall } from './tool-calls.js';

// The Temporal SDK is CommonJS and optional: it is loaded with `require` once the entry checked
// it is installed (`require-temporal.ts`), so that its absence is one clear line.
const require = createRequire(import.meta.url);
const { ApplicationFailure, Context } = require('@temporalio/activity') as typeof import('@temporalio/activity');
// Temporal's own reading of durations ('30s', '3 days', milliseconds), so they mean what they mean in Temporal.
const { msToNumber } = require('@temporalio/common/lib/time') as typeof import('@temporalio/common/lib/time.js');

/** Which model a worker host uses for a worker file: its `model` (`provider:model`, or undefined) in, an AI SDK model out. */
export type ModelForWorker = (modelId: string | undefined) => LanguageModel | Promise<LanguageModel>;

/** `toolgateActivities` options: what each worker host decides for itself. */
export interface ToolgateActivitiesOptions {
  /**
   * The model, decided on the worker host (its provider and key never travel in workflow
   * history): an AI SDK model, a `provider:model` spec, or a function from the worker file's
   * `model` to a model (called for each model step). Default: the worker file's `model`, resolved
   * with this host's environment (`OPENAI_API_KEY`, …).
   */
  model?: LanguageModel | ModelForWorker;
  /** Appends each run's audit lines here (the worker file's `audit.file` otherwise). */
  audit?: AuditOptions;
  /** Model steps of a run when `toolgateRun` does not say (default: the worker's `max_steps`, else the core's default). */
  maxSteps?: number;
  /** Replaces the sandbox root as the work directory; must be the same on every host (it is part of the run's identity). */
  workDir?: string;
  /** Forces a read-only sandbox; must be the same on every host. */
  readonly?: boolean;
  /** A model step or tool call whose host sends no heartbeat for this long is lost (default `'30s'`). */
  heartbeatTimeout?: DurationText;
  /** The longest a tool call may take (default `'1 hour'`; tools also have their own timeouts). */
  toolCallTimeout?: DurationText;
  /** The longest a model step may take (default `'10 minutes'`). */
  modelStepTimeout?: DurationText;
  /** Attempts of a call of a tool that only reads (default 3); every other call gets exactly one. */
  readOnlyAttempts?: number;
  /**
   * The worker files this host runs: absolute paths of files, or of directories whose worker
   * files it runs. A run naming another file is refused (`CONFIG_INVALID`) before the file is
   * read. Default: any worker file the client names.
   */
  workerFiles?: readonly string[];
}

const OPTION_KEYS = [
  'model',
  'audit',
  'maxSteps',
  'workDir',
  'readonly',
  'heartbeatTimeout',
  'toolCallTimeout',
  'modelStepTimeout',
  'readOnlyAttempts',
  'workerFiles',
];

function durationMs(value: DurationText | undefined, fallback: string, where: string): number {
  let ms: number;
  try {
    ms = msToNumber(value ?? (fallback as never));
  } catch (error) {
    throw new ToolgateError('CONFIG_INVALID', `${where}: ${JSON.stringify(value)} is not a duration (${error instanceof Error ? error.message : String(error)}); write milliseconds or a duration such as '30s' or '3 days'`);
  }
  if (!Number.isFinite(ms) || ms <= 0) throw new ToolgateError('CONFIG_INVALID', `${where}: ${JSON.stringify(value)} is not a positive duration`);
  return ms;
}

interface CheckedOptions {
  model: ToolgateActivitiesOptions['model'];
  audit: { file: string; redact: string[] } | null;
  maxSteps: number | undefined;
  load: { workDir?: string; readonly?: boolean };
  timeouts: ActivityTimeouts;
  allowed: ((path: string) => void) | undefined;
}

/**
 * Whether this host runs a worker file: one of `entries` (files) or inside one of them
 * (directories, confined by the core's PathValidator, symlinks followed). Throws `CONFIG_INVALID`.
 */
function allowedWorkerFiles(entries: readonly string[]): (path: string) => void {
  if (!Array.isArray(entries) || entries.some((entry) => typeof entry !== 'string' || !isAbsolute(entry))) {
    throw new ToolgateError('CONFIG_INVALID', 'toolgateActivities: workerFiles is a list of absolute paths of worker files or directories');
  }
  const files = new Set<string>();
  const directories: PathValidator[] = [];
  for (const entry of entries) {
    let stats;
    try {
      stats = statSync(entry);
    } catch {
      throw new ToolgateError('CONFIG_INVALID', `toolgateActivities: workerFiles names '${entry}', which does not exist on this host`);
    }
    if (stats.isDirectory()) directories.push(new PathValidator(entry));
    else files.add(realpathSync(entry));
  }
  return (path) => {
    let real: string | undefined;
    try {
      real = realpathSync(path);
    } catch {
      real = undefined;
    }
    if (real !== undefined && files.has(real)) return;
    for (const directory of directories) {
      try {
        directory.resolve(path);
        return;
      } catch {
        // not inside this one
      }
    }
    throw new ToolgateError(
      'CONFIG_INVALID',
      `worker file '${path}' is not one this worker host runs (workerFiles: ${entries.join(', ')}); add it, or its directory, to toolgateActivities({ workerFiles })`,
    );
  };
}

function checkOptions(options: ToolgateActivitiesOptions): CheckedOptions {
  if (options === null || typeof options !== 'object') throw new ToolgateError('CONFIG_INVALID', 'toolgateActivities takes an options object');
  const unknown = Object.keys(options).filter((key) => !OPTION_KEYS.includes(key));
  if (unknown.length > 0) {
    throw new ToolgateError('CONFIG_INVALID', `toolgateActivities: unknown option '${unknown[0]}'; accepted options are ${OPTION_KEYS.join(', ')}`);
  }
  const { model } = options;
  if (model !== undefined && typeof model !== 'function' && typeof model !== 'string' && (typeof model !== 'object' || model === null)) {
    throw new ToolgateError('CONFIG_INVALID', 'toolgateActivities: model is an AI SDK model, a provider:model spec or a function from the worker file\'s model to one');
  }
  const checked = callNative(() => native.checkRunWorkerOptions({ maxSteps: options.maxSteps, audit: options.audit }));
  const load = { ...(options.workDir === undefined ? {} : { workDir: options.workDir }), ...(options.readonly === undefined ? {} : { readonly: options.readonly }) };
  callNative(() => native.checkLoadWorkerOptions(load));
  const attempts = options.readOnlyAttempts ?? 3;
  if (!Number.isInteger(attempts) || attempts < 1 || attempts > 100) {
    throw new ToolgateError('CONFIG_INVALID', `toolgateActivities: readOnlyAttempts is ${JSON.stringify(attempts)}; give a whole number from 1 to 100`);
  }
  return {
    model,
    allowed: options.workerFiles === undefined ? undefined : allowedWorkerFiles(options.workerFiles),
    audit: checked.audit ?? null,
    maxSteps: checked.maxSteps ?? undefined,
    load,
    timeouts: {
      heartbeatTimeoutMs: durationMs(options.heartbeatTimeout, '30s', 'toolgateActivities: heartbeatTimeout'),
      toolCallTimeoutMs: durationMs(options.toolCallTimeout, '1 hour', 'toolgateActivities: toolCallTimeout'),
      modelStepTimeoutMs: durationMs(options.modelStepTimeout, '10 minutes', 'toolgateActivities: modelStepTimeout'),
      readOnlyAttempts: attempts,
    },
  };
}

/** A toolgate refusal (a changed file, a bad option, a missing key) ends the run: it is not retried. */
function asActivityFailure(error: unknown): unknown {
  if (error instanceof ToolgateError) return ApplicationFailure.create({ message: error.message, type: error.code, nonRetryable: true });
  return error;
}

function activity<Input, Output>(body: (input: Input) => Promise<Output>): (input: Input) => Promise<Output> {
  return async (input) => {
    try {
      return await body(input);
    } catch (error) {
      throw asActivityFailure(error);
    }
  };
}

/** Runs `body` while heartbeating, with the activity's cancellation signal (a heartbeat is how cancellation arrives). */
async function heartbeating<T>(timeouts: ActivityTimeouts, body: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const context = Context.current();
  const timer = setInterval(() => context.heartbeat(), Math.max(100, Math.floor(timeouts.heartbeatTimeoutMs / 3)));
  try {
    context.heartbeat();
    return await body(context.cancellationSignal);
  } finally {
    clearInterval(timer);
  }
}

/**
 * The activities of toolgate's workflow, to register on a `@temporalio/worker` `Worker` beside
 * `workflowsPath`: loading a worker file's plan (`toolgatePlan`), one model step
 * (`toolgateModelStep`), one gated tool call (`toolgateToolCall`), and the bookkeeping around
 * them (`toolgateLostCall`, `toolgateCoveredCalls`, `toolgateRunEnd`). Every decision is the same
 * code as `runWorker`'s; audit lines are appended by the activity that makes them, under the run
 * id (the workflow id). Throws `CONFIG_INVALID` for bad options.
 */
export function toolgateActivities(options: ToolgateActivitiesOptions = {}): ToolgateActivityFunctions {
  const settings = checkOptions(options);
  const hosts = new HostedWorkers(settings.load, settings.allowed);

  const modelFor = async (hosted: HostedWorker): Promise<string | LanguageModel | undefined> => {
    const { model } = settings;
    if (typeof model === 'function') return model(hosted.worker.model);
    return model;
  };
  const setupFor = async (hosted: HostedWorker, run: { runId: string; maxSteps?: number | undefined; always?: AlwaysScope[] }, signal?: AbortSignal): Promise<RunSetup> =>
    prepareRun(
      hosted.worker,
      { model: await modelFor(hosted), ...(signal ? { signal } : {}) },
      { maxSteps: run.maxSteps, stream: false, runId: run.runId, always: run.always ?? [], audit: settings.audit },
    );
  /** The run's audit trail on this host (lines are appended by `flush`), when the run is audited. */
  const trailFor = (hosted: HostedWorker, ref: RunRef): AuditTrail | undefined => {
    const target = auditTarget(hosted.worker, settings.audit);
    return target ? new AuditTrail(target, ref.runId, hosted.worker.name) : undefined;
  };

  return {
    toolgatePlan: activity(async (input): Promise<RunPlan> => {
      const hosted = await hosts.current(input.worker);
      checkInput(hosted.worker, input.input);
      const maxSteps = callNative(() => native.checkRunWorkerOptions({ maxSteps: input.maxSteps ?? settings.maxSteps })).maxSteps ?? undefined;
      let approvalTimeoutMs: number | undefined;
      if (input.approvalTimeout !== undefined) {
        try {
          approvalTimeoutMs = durationMs(input.approvalTimeout, '', 'toolgateRun: approvalTimeout');
        } catch (error) {
          throw new ToolgateError('INVALID_INPUT', (error as Error).message);
        }
      }
      // Everything runWorker checks before a run starts (the model and its key on this host, the step limit).
      const setup = await setupFor(hosted, { runId: input.runId, maxSteps });
      const ref = { worker: input.worker, identity: hosted.identity, runId: input.runId };
      const trail = trailFor(hosted, ref);
      if (trail) {
        trail.start({ input: input.input, model: setup.modelLabel, resumed: false, workerFile: hosted.worker.path });
        await trail.flush();
      }
      return {
        name: hosted.worker.name,
        identity: hosted.identity,
        maxSteps: setup.maxSteps,
        readOnlyTools: hosted.readOnlyTools,
        audited: trail !== undefined,
        ...(approvalTimeoutMs === undefined ? {} : { approvalTimeoutMs }),
        timeouts: settings.timeouts,
      };
    }),

    toolgateModelStep: activity(async (input) =>
      heartbeating(settings.timeouts, async (signal) => {
        const hosted = await hosts.pinned(input);
        const setup = await setupFor(hosted, { runId: input.runId, maxSteps: input.maxSteps, always: input.always }, signal);
        setup.trail = trailFor(hosted, input);
        try {
          return await modelStep(setup, input, signal);
        } finally {
          await setup.trail?.flush();
        }
      }),
    ),

    toolgateToolCall: activity(async (input) =>
      heartbeating(settings.timeouts, async (signal) => {
        const hosted = await hosts.pinned(input);
        const trail = trailFor(hosted, input);
        const emit = (event: RunEvent) => trail?.collect(event);
        const gate = new ApprovalGate(undefined, emit, signal, [], hosted.worker.name);
        const recorder = new Recorder(emit);
        // Hosts a network-by-host sandbox would ask about are refused here (nobody to ask in an
        // activity); every connection is recorded in the audit trail.
        const run = { gate, recorder, network: new NetworkApprovals(gate, (record) => recorder.connection(record)) };
        const call = () => runToolCall(hosted, input, run, signal);
        // A worker the call runs (the `workers` toolset) gets this host's model and the run's
        // recorder, as a worker called inside runWorker does.
        const delegated = hosted.plan.workers()[0]?.delegates.some((delegate) => delegate.name === input.toolName);
        let result;
        if (delegated) {
          const { context: resolved } = await setupFor(hosted, input, signal);
          // A model (or spec) given to the activities is forced on called workers too, as runWorker's
          // `model` option is; a function leaves each called worker its own `model`.
          const forcedModel = settings.model !== undefined && typeof settings.model !== 'function';
          const context = { depth: 0, chain: [hosted.worker.name], gate: run.gate, network: run.network, model: resolved.model, forcedModel, emit };
          result = await runContext.run(context, call);
        } else {
          result = await call();
        }
        await trail?.flush();
        return result;
      }),
    ),

    toolgateLostCall: activity(async (input) => {
      const hosted = await hosts.pinned(input);
      const trail = trailFor(hosted, input);
      const result = recordLostCall(hosted, input, (event) => trail?.collect(event));
      await trail?.flush();
      return result;
    }),

    toolgateCoveredCalls: activity(async (input) => {
      const hosted = await hosts.pinned(input);
      const gate = new ApprovalGate(undefined, () => {}, undefined, input.always, hosted.worker.name);
      return input.calls.map((call) => gate.coveredByAlways(hosted.tools.get(call.toolName), call.toolName, call.input));
    }),

    toolgateRunEnd: activity(async (input) => {
      // Only appends the audit log's last line: the version on this host says where it goes,
      // even when it is not the run's (the run then ends with that refusal).
      const hosted = await hosts.current(input.worker);
      const trail = trailFor(hosted, input);
      if (!trail) return;
      const { end } = input;
      trail.end('error' in end ? { error: Object.assign(new Error(end.error), end.errorCode ? { code: end.errorCode } : {}) } : end, input.durationMs);
      await trail.flush();
    }),
  };
}
