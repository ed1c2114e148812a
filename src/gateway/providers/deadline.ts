/**
 * The signal of a buffered upstream call: aborted when the client's signal fires (with its reason) or when the total
 * deadline passes (with a `TimeoutError`, as `AbortSignal.timeout` would, so providers/errors.ts classifies it as a
 * timeout). One controller and one timer per call instead of `AbortSignal.any([client, AbortSignal.timeout(ms)])`,
 * whose weak-reference bookkeeping showed up in the gateway's CPU profile; `release()` clears both once the answer is
 * read, so nothing lingers for the deadline's 15 minutes.
 */
export interface Deadline {
  readonly signal: AbortSignal;
  release(): void;
}

export function deadlineSignal(clientSignal: AbortSignal, ms: number): Deadline {
  if (clientSignal.aborted) return { signal: clientSignal, release() {} };
  const controller = new AbortController();
  const onClientAbort = () => controller.abort(clientSignal.reason);
  clientSignal.addEventListener('abort', onClientAbort, { once: true });
  const timer = setTimeout(() => controller.abort(new DOMException('The upstream call took longer than its deadline.', 'TimeoutError')), ms);
  timer.unref();
  return {
    signal: controller.signal,
    release() {
      clearTimeout(timer);
      clientSignal.removeEventListener('abort', onClientAbort);
    },
  };
}
