/**
 * Turns of the event loop for work done in slices between requests (the store's sliced commit at light load,
 * src/store/store.ts) that let a request which arrived meanwhile go first.
 *
 * Why: such work gives the loop a turn with a `setImmediate` between two slices. A request arriving in the poll that
 * follows queues its own Immediates behind that one, among them its upstream call's write (undici writes to a reused
 * connection from an Immediate), so the next slice ran first and the upstream call left a whole slice later (~0.2-0.3
 * ms at concurrency 1). When a request arrived during the turn, `turn` waits one more: the slice then runs after the
 * write, while the upstream answers (docs/performance-notes.md, "A slice waits for the request that arrived").
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { setImmediate as nextTurn } from 'node:timers/promises';

/** node:http's channel for a request arriving, on every server of the process. */
const REQUEST_START = 'http.server.request.start';

export class RequestArrivals {
  private count = 0;
  private watching = false;

  /** Count the requests this process's HTTP servers receive, until stop(). */
  watch(): void {
    if (this.watching) return;
    this.watching = true;
    subscribe(REQUEST_START, this.onArrival);
  }

  stop(): void {
    if (this.watching) unsubscribe(REQUEST_START, this.onArrival);
    this.watching = false;
  }

  /** Requests received since watch(). */
  get arrived(): number {
    return this.count;
  }

  /** One turn of the event loop, and one more if a request arrived during it (see above). */
  readonly turn = async (): Promise<void> => {
    const before = this.count;
    await nextTurn();
    if (this.count !== before) await nextTurn();
  };

  private readonly onArrival = (): void => {
    this.count++;
  };
}
