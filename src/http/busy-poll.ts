/**
 * Busy polling of the event loop (`SVC_BUSY_POLL_US`, docs/performance-notes.md "Busy polling"): when a request arrives
 * or a response is finished, the event loop keeps polling its sockets through the quiet stretch that follows, up to
 * a window, instead of sleeping in it, so the next packet (the upstream's answer, the client's next request) finds
 * svc running.
 *
 * Why: a thread that sleeps with nothing else to run lets its CPU idle, and a virtual CPU that idles is halted by the
 * hypervisor unless the guest polls first (here cpuidle-haltpoll with `guest_halt_poll_ns` 0, as on Firecracker).
 * Waking it again for the packet cost ~0.07 ms here, twice per proxied request on svc's side. This is what
 * Linux's guest halt polling does before it halts, done inside svc's own loop.
 *
 * How: each poll is a `setImmediate` (while one is pending, libuv polls the sockets without blocking) that, when the
 * loop ran nothing else since the last poll, first spins ~10 µs on the clock, so a quiet loop makes ~100,000 polls a
 * second instead of ~1.6 million short-lived Immediates. Activity is what the HTTP servers report on their diagnostics
 * channels (a request started, a response finished), not gaps between polls: a quiet virtual CPU still sees gaps
 * (timer interrupts, the collector), and counting them as activity kept an idle loop polling for good. A quiet
 * stretch starts at the first poll after the activity's turn, or after other work up to a bound; one that outlasts
 * the window ends the polling.
 *
 * Adaptive: the share of quiet stretches that ended in activity (a moving average) says whether polling pays. Below
 * half, the traffic's gaps are longer than the window (a model answering in hundreds of milliseconds, sparse
 * requests), and activity starts polling only once in `PROBE_EVERY`, so the spinning stops costing CPU where it
 * saves nothing, and a probe notices when the traffic changes. Under a CPU quota of less than two CPUs it is off
 * unless asked for (`defaultBusyPollUs`): there the spin would use up the quota the work needs.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { performance } from 'node:perf_hooks';

/** How long each quiet poll spins before libuv polls again. */
const SPIN_MS = 0.01;
/**
 * Integer steps between two reads of the clock while spinning (~1 µs here). A read returns a new heap number outside
 * V8's optimised code, and reading the clock back to back made the spin fill the young generation: at c=1, 1.95
 * scavenges per 100 requests instead of 1.37 without polling.
 */
const SPIN_STEPS_PER_CLOCK_READ = 1024;
/** Written by the spin's steps, so that they are not optimised away. */
let spinSink = 0;
/** Two polls further apart than this had callbacks run between them: no need to spin before the next. */
const RAN_CALLBACKS_MS = 0.02;
/**
 * Work seen between two polls (callbacks ran: a commit, a collection) starts the quiet stretch again, for up to this
 * many windows after the last activity: a loop busy with its own work is not quiet, but the gaps a quiet virtual CPU
 * still sees (interrupts) must not keep it polling for good.
 */
const WORK_KEEPS_POLLING_WINDOWS = 4;
/** The weight of the latest quiet stretch in `caughtShare`. */
const CAUGHT_WEIGHT = 1 / 8;
/** Below this share of quiet stretches caught, polling starts only on probes. */
const PAYS_SHARE = 0.5;
/** While polling does not pay, one activity in this many starts it (a probe). */
export const PROBE_EVERY = 16;
/** The window when SVC_BUSY_POLL_US is unset and no CPU quota under `QUOTA_TURNS_OFF_CPUS` applies. */
export const DEFAULT_WINDOW_US = 500;
/**
 * Under a CPU quota of fewer CPUs than this (a container's `--cpus`, a Kubernetes limit), polling is off unless asked
 * for: the spin's time is taken from the quota the work needs. Measured with svc in a cgroup of half a CPU, c=2, an
 * upstream answering in 1 ms: 403 requests a second with polling against 503 without.
 */
export const QUOTA_TURNS_OFF_CPUS = 2;

/** The window for a process under `quotaCpus` CPUs of quota (null: none). */
export function defaultBusyPollUs(quotaCpus: number | null): number {
  return quotaCpus !== null && quotaCpus < QUOTA_TURNS_OFF_CPUS ? 0 : DEFAULT_WINDOW_US;
}

/** node:http's diagnostics channels for a request arriving and a response finished, of every server in the process. */
const HTTP_ACTIVITY = ['http.server.request.start', 'http.server.response.finish'] as const;

export interface BusyPollStats {
  /** Polling periods started (by activity while the loop was not polling). */
  periods: number;
  /** Quiet stretches that ended in activity while the loop polled. */
  caught: number;
  /** Quiet stretches that outlasted the window (the loop went to sleep). */
  missed: number;
}

export class BusyPoll {
  private readonly windowMs: number;
  private polling = false;
  private stopped = false;
  private watching = false;
  /** Activity came since the last poll. */
  private active = false;
  /** The period's first poll is still to come (the activity that started the period is not a stretch caught). */
  private fresh = false;
  /** When the current quiet stretch began (the first poll after the last activity or work), ms. */
  private quietSince = 0;
  /** The first poll after the last activity, ms. */
  private activeAt = 0;
  /** When the last poll ended, ms. */
  private lastPollAt = 0;
  private caughtShare = 1;
  private activitiesNotPaying = 0;
  private readonly counts: BusyPollStats = { periods: 0, caught: 0, missed: 0 };

  /** windowUs: the longest quiet stretch polled through, in microseconds; 0 turns busy polling off. */
  constructor(windowUs: number) {
    this.windowMs = windowUs / 1000;
  }

  /** Poll after the activity of this process's HTTP servers, until stop(). Nothing when the window is 0. */
  watchHttpServers(): void {
    if (this.windowMs === 0 || this.watching || this.stopped) return;
    this.watching = true;
    for (const channel of HTTP_ACTIVITY) subscribe(channel, this.onActivity);
  }

  /** Stop polling and watching for good (the server is closing). */
  stop(): void {
    if (this.watching) for (const channel of HTTP_ACTIVITY) unsubscribe(channel, this.onActivity);
    this.watching = false;
    this.stopped = true;
  }

  /** Something happened that more is likely to follow soon: poll through the quiet stretch after it. */
  activity(): void {
    if (this.polling) {
      this.active = true;
      return;
    }
    if (this.stopped || this.windowMs === 0) return;
    if (this.caughtShare < PAYS_SHARE && ++this.activitiesNotPaying % PROBE_EVERY !== 0) return;
    this.polling = true;
    this.active = true;
    this.fresh = true;
    this.counts.periods++;
    setImmediate(this.poll);
  }

  get isPolling(): boolean {
    return this.polling;
  }

  get stats(): Readonly<BusyPollStats> {
    return this.counts;
  }

  private readonly onActivity = (): void => this.activity();

  private readonly poll = (): void => {
    if (this.stopped) {
      this.polling = false;
      return;
    }
    let now = performance.now();
    const ranCallbacks = now - this.lastPollAt > RAN_CALLBACKS_MS;
    if (this.active) {
      if (!this.fresh) this.note(true);
      this.fresh = false;
      this.active = false;
      this.quietSince = now;
      this.activeAt = now;
    } else if (ranCallbacks && now - this.activeAt < WORK_KEEPS_POLLING_WINDOWS * this.windowMs) {
      this.quietSince = now; // the loop worked (a commit, a collection): not quiet, though not activity either
    } else if (now - this.quietSince >= this.windowMs) {
      this.note(false);
      this.polling = false;
      return;
    } else if (!ranCallbacks) {
      const until = now + SPIN_MS;
      while (now < until) {
        for (let step = 0; step < SPIN_STEPS_PER_CLOCK_READ; step++) spinSink = (spinSink + step) | 0;
        now = performance.now();
      }
    }
    this.lastPollAt = now;
    setImmediate(this.poll);
  };

  private note(caught: boolean): void {
    if (caught) this.counts.caught++;
    else this.counts.missed++;
    this.caughtShare += ((caught ? 1 : 0) - this.caughtShare) * CAUGHT_WEIGHT;
    if (this.caughtShare >= PAYS_SHARE) this.activitiesNotPaying = 0;
  }
}
