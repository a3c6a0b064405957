import { prepareFreshRun, prepareResumedRun, runFresh } from './run-worker.js';
import type { RunSetup } from './run-loop.js';
import type { ApprovalAnswers, ResumeWorkerOptions, RunEvent, RunnableWorker, RunWorkerOptions, WorkerRunResult } from './types.js';

/**
 * A streamed run: iterate it for the run's events as they happen — the same events as
 * `onEvent`, plus `text-delta` while the model writes — and await `result` for the same result
 * `runWorker` returns. Iterating ends when the run ends; a failed run makes both the iteration
 * and `result` reject with the error.
 */
export interface WorkerStream extends AsyncIterable<RunEvent> {
  result: Promise<WorkerRunResult>;
}

/** A queue of events with one consumer, closed when the run ends. */
class EventQueue implements AsyncIterable<RunEvent> {
  readonly #events: RunEvent[] = [];
  #waiting: (() => void) | undefined;
  #done = false;
  #error: { error: unknown } | undefined;

  push(event: RunEvent): void {
    this.#events.push(event);
    this.#wake();
  }

  close(error?: { error: unknown }): void {
    this.#done = true;
    this.#error = error;
    this.#wake();
  }

  #wake(): void {
    const waiting = this.#waiting;
    this.#waiting = undefined;
    waiting?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<RunEvent> {
    for (;;) {
      const event = this.#events.shift();
      if (event) {
        yield event;
        continue;
      }
      if (this.#done) {
        if (this.#error) throw this.#error.error;
        return;
      }
      await new Promise<void>((resolve) => (this.#waiting = resolve));
    }
  }
}

function streamOf(start: (onEvent: (event: RunEvent) => void) => Promise<WorkerRunResult>): WorkerStream {
  const queue = new EventQueue();
  const result = start((event) => queue.push(event)).then(
    (value) => {
      queue.close();
      return value;
    },
    (error: unknown) => {
      queue.close({ error });
      throw error;
    },
  );
  // A caller that only iterates sees the error there; `result` must not also crash the process.
  result.catch(() => {});
  return { result, [Symbol.asyncIterator]: () => queue[Symbol.asyncIterator]() };
}

/**
 * Runs a worker like `runWorker`, on the AI SDK's `streamText`: the same approvals (a handler,
 * or `'defer'`), records, audit log and abort behaviour, and the model's text as it streams.
 * `options.onEvent`, when given, sees every event too.
 */
export function streamWorker(worker: RunnableWorker, input: string, options: RunWorkerOptions = {}): WorkerStream {
  return streamOf(async (push) => {
    const onEvent = (event: RunEvent) => {
      push(event);
      options.onEvent?.(event);
    };
    const setup: RunSetup = await prepareFreshRun(worker, input, { ...options, onEvent }, true);
    return runFresh(setup, input, options.messages);
  });
}

/** `resumeWorker`, streamed (see `streamWorker`). */
export function streamResumedWorker(
  worker: RunnableWorker,
  state: string,
  answers: ApprovalAnswers,
  options: ResumeWorkerOptions,
): WorkerStream {
  return streamOf(async (push) => {
    const onEvent = (event: RunEvent) => {
      push(event);
      options.onEvent?.(event);
    };
    const { run } = await prepareResumedRun(worker, state, answers, { ...options, onEvent }, true);
    return run();
  });
}
