/**
 * The signal of a buffered upstream call: aborted when the client's signal fires (with its reason) or when the total
 * deadline passes (with a `TimeoutError`, as `AbortSignal.timeout` would, so providers/errors.ts classifies it as a
 * timeout). One timer per call instead of `AbortSignal.any([client, AbortSignal.timeout(ms)])`, whose weak-reference
 * bookkeeping showed up in the gateway's CPU profile; `release()` clears it and the client listener once the answer
 * is read, so nothing lingers for the deadline's 15 minutes.
 */
import { EventEmitter } from 'node:events';

/**
 * What undici's `request` takes as a signal besides an AbortSignal: an EventEmitter with `aborted` and `reason`,
 * emitting `abort`. Node 20's AbortSignal costs ~3 µs to make and listen to, and every one survives the young
 * generation's collections (V8 gives each its own map after its prototype is set): ~300 bytes promoted per signal,
 * with one per upstream call. This one costs a tenth and dies young.
 */
export class UpstreamSignal extends EventEmitter {
  aborted = false;
  reason: unknown = undefined;

  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.emit('abort');
  }
}

export interface Deadline {
  readonly signal: AbortSignal | UpstreamSignal;
  release(): void;
}

export function deadlineSignal(clientSignal: AbortSignal, ms: number): Deadline {
  if (clientSignal.aborted) return { signal: clientSignal, release() {} };
  const signal = new UpstreamSignal();
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
