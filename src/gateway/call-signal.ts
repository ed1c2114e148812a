/**
 * The signal a gateway call carries: it fires when the client goes away (or, for an upstream call's own signal, when
 * its deadline passes). Node 20's AbortSignal costs ~3 µs to make and listen to, and every one of them survives the
 * young generation's collections (~300 bytes promoted per signal, on every request; measured,
 * docs/performance-notes.md).
 * `GatewaySignal` does the same job as a plain EventEmitter, a tenth of the cost, and dies young. The gateway's code
 * takes any `CallSignal`, so an AbortSignal (tests, other callers) works as well.
 */
import { EventEmitter } from 'node:events';

type AbortListener = () => void;

/** What the gateway uses of a signal; Node's AbortSignal has it too. */
export interface CallSignal {
  readonly aborted: boolean;
  readonly reason: unknown;
  addEventListener(type: 'abort', listener: AbortListener, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: AbortListener): void;
}

/** A signal and its own `abort` (an AbortController and its signal in one). */
export class GatewaySignal extends EventEmitter implements CallSignal {
  aborted = false;
  reason: unknown = undefined;

  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.emit('abort');
  }

  addEventListener(type: 'abort', listener: AbortListener, options?: { once?: boolean }): void {
    if (options?.once) this.once(type, listener);
    else this.on(type, listener);
  }

  removeEventListener(type: 'abort', listener: AbortListener): void {
    this.removeListener(type, listener);
  }
}

/**
 * A call signal as undici's `request` takes it. undici's types name AbortSignal and EventEmitter, but it only asks
 * for `aborted`, `reason` and `addEventListener`/`removeEventListener` (or an EventEmitter's `once`/`removeListener`),
 * which every CallSignal has.
 */
export function undiciSignal(signal: CallSignal): AbortSignal {
  return signal as AbortSignal;
}
