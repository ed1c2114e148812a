/**
 * Work a request puts off to a later turn of the event loop (a run's recording after its answer went out) runs outside
 * that request: nothing awaits it, so what it throws (a store failure, a programming error) would be an uncaught
 * exception, and end `svc serve` with every request in flight. `deferContained` runs such work with its failure logged
 * instead, once, with the run it belongs to: one request's failure stays its own.
 */

/** Where a contained failure is logged: pino's signature (a request's `request.log`). */
export interface FailureLog {
  error(fields: Record<string, unknown>, message: string): void;
}

/**
 * Run `work` on the next turn of the event loop (setImmediate), a throw logged at `error` with `runId` rather than
 * thrown. Module-level `runContained` with its arguments passed through: no closure per call, only the timer's small
 * array of arguments.
 */
export function deferContained(work: () => void, log: FailureLog, runId: string): void {
  setImmediate(runContained, work, log, runId);
}

function runContained(work: () => void, log: FailureLog, runId: string): void {
  try {
    work();
  } catch (error) {
    // The error's own message and stack only: what recording throws carries no request header or credential.
    log.error({ err: error, runId }, "a run's recording after its answer failed; svc serves on, the run left as far as it was recorded");
  }
}
