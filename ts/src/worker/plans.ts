import type { native } from '../native/binding.js';

/** The plan each loaded worker was built from (for its fingerprint and redaction patterns). */
const PLANS = new WeakMap<object, native.WorkerPlan>();

/** Remembers that `worker` was built from `plan` (the top worker of a plan only). */
export function rememberPlan(worker: object, plan: native.WorkerPlan): void {
  PLANS.set(worker, plan);
}

/** The plan `worker` was built from, when `loadWorker` built it. */
export function planOf(worker: object): native.WorkerPlan | undefined {
  return PLANS.get(worker);
}
