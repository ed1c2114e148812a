/**
 * Whether an upstream call failed after its request was written to a connection. What such a failure cost is unknown:
 * the upstream may have run the call and billed it (a timeout while it works, a connection that broke, a client that
 * left). One that failed before (no connection: refused, DNS, connect timeout, or a deadline or client abort while
 * connecting) never reached the upstream and cost nothing (docs/gateway.md, "Cost"). undici's error codes cannot tell
 * the two apart for an abort (svc's own deadline, the client's signal), which fails with the signal's reason at any
 * point; undici's handler hook can: `onRequestSent` is called once the request is written to its socket.
 *
 * `noteRequestWrites` wraps the dispatcher every live provider calls through, once per registry: each call's handler
 * is wrapped in a `WriteNotingHandler`, which notes the write and marks the error the call then fails with, so that
 * `failedAfterRequestWritten` (providers/errors.ts `classifyThrown`) reads it off the error that arrives.
 */
import type { Duplex } from 'node:stream';
import { Dispatcher } from 'undici';

/**
 * Errors that failed a call after its request was written. Weak and filled on failures only: nothing is added on a
 * call that succeeds, and an entry goes with its error.
 */
const failedAfterWrite = new WeakSet<object>();

/** Whether `error` failed an upstream call after its request had been written to the upstream's connection. */
export function failedAfterRequestWritten(error: unknown): boolean {
  return typeof error === 'object' && error !== null && failedAfterWrite.has(error);
}

type LegacyHandler = Required<Pick<Dispatcher.DispatchHandler, 'onConnect' | 'onError'>> & Dispatcher.DispatchHandler;

/**
 * A call's handler (undici's `request` makes one of the handler interface undici's connections call) that notes when
 * the request was written. A class, not an object literal of closures: one small object per call, its methods shared.
 */
class WriteNotingHandler implements Dispatcher.DispatchHandler {
  private written = false;

  constructor(private readonly handler: LegacyHandler) {}

  onConnect(abort: (error?: Error) => void): void {
    this.handler.onConnect(abort);
  }

  onRequestSent(): void {
    this.written = true;
  }

  onError(error: Error): void {
    // Any value may be a signal's reason; only an object can be marked.
    if (this.written && typeof error === 'object' && error !== null) failedAfterWrite.add(error);
    this.handler.onError(error);
  }

  onResponseStarted(): void {
    this.handler.onResponseStarted?.();
  }

  onHeaders(statusCode: number, headers: Buffer[], resume: () => void, statusText: string): boolean {
    return this.handler.onHeaders!(statusCode, headers, resume, statusText);
  }

  onData(chunk: Buffer): boolean {
    return this.handler.onData!(chunk);
  }

  onComplete(trailers: string[] | null): void {
    this.handler.onComplete!(trailers);
  }

  onUpgrade(statusCode: number, headers: Buffer[] | string[] | null, socket: Duplex): void {
    this.handler.onUpgrade!(statusCode, headers, socket);
  }
}

/** A dispatcher that dispatches through `inner`, noting each call's request write (above). */
class RequestWriteNotingDispatcher extends Dispatcher {
  constructor(private readonly inner: Dispatcher) {
    super();
  }

  override dispatch(options: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    // A handler of undici's newer interface (fetch's) goes through as it is: the providers call `request`, whose
    // handler has the one above.
    if (typeof handler.onRequestStart === 'function' || typeof handler.onConnect !== 'function' || typeof handler.onError !== 'function') {
      return this.inner.dispatch(options, handler);
    }
    return this.inner.dispatch(options, new WriteNotingHandler(handler as LegacyHandler));
  }

  override close(): Promise<void>;
  override close(callback: () => void): void;
  override close(callback?: () => void): Promise<void> | void {
    return callback ? this.inner.close(callback) : this.inner.close();
  }

  override destroy(): Promise<void>;
  override destroy(error: Error | null): Promise<void>;
  override destroy(callback: () => void): void;
  override destroy(error: Error | null, callback: () => void): void;
  override destroy(error?: Error | null | (() => void), callback?: () => void): Promise<void> | void {
    if (typeof error === 'function') return this.inner.destroy(error);
    if (callback) return this.inner.destroy(error ?? null, callback);
    return this.inner.destroy(error ?? null);
  }
}

/** `dispatcher` with each call's request write noted (`failedAfterRequestWritten`). */
export function noteRequestWrites(dispatcher: Dispatcher): Dispatcher {
  return new RequestWriteNotingDispatcher(dispatcher);
}
