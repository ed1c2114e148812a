/**
 * The signal of a buffered upstream call: aborted when the client's signal fires (with its reason) or when the total
 * deadline passes (with a `TimeoutError`, as `AbortSignal.timeout` would, so providers/errors.ts classifies it as a
 * timeout). One timer per call instead of `AbortSignal.any([client, AbortSignal.timeout(ms)])`, whose weak-reference
 * bookkeeping showed up in the gateway's CPU profile, and a GatewaySignal instead of another AbortSignal
 * (../call-signal.ts); `release()` clears the timer and the client listener once the answer is read, so nothing
 * lingers for the deadline's 15 minutes.
 */
import { GatewaySignal, type CallSignal } from '../call-signal.ts';

export interface Deadline {
  readonly signal: CallSignal;
  release(): void;
}

export function deadlineSignal(clientSignal: CallSignal, ms: number): Deadline {
  if (clientSignal.aborted) return { signal: clientSignal, release() {} };
  const signal = new GatewaySignal();
  const onClientAbort = () => signal.abort(clientSignal.reason);
  clientSignal.addEventListener('abort', onClientAbort, { once: true });
  const timer = setTimeout(() => signal.abort(new DOMException('The upstream call took longer than its deadline.', 'TimeoutError')), ms);
  timer.unref();
  return {
    signal,
    release() {
      clearTimeout(timer);
      clientSignal.removeEventListener('abort', onClientAbort);
    },
  };
}
