/**
 * Busy polling (src/http/busy-poll.ts): after a request the event loop polls instead of sleeping through quiet
 * stretches of up to its window, stops on its own, and backs off when the stretches outlast the window.
 * "Sleeping" is read from the loop's own idle time (performance.eventLoopUtilization), not from timings.
 */
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import test from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { BusyPoll, DEFAULT_WINDOW_US, PROBE_EVERY, defaultBusyPollUs } from '../../src/http/busy-poll.ts';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { startServer } from '../../src/server.ts';
import { tempDir } from '../support/process.ts';

/**
 * The window of the tests below. A quiet stretch is wall-clock time, and at a load of ~25 on two CPUs the process was
 * descheduled for 50 ms at a time between two polls: with 50 ms windows, polling ended mid-test as if the loop had
 * been quiet that long. 100 ms leaves room for that.
 */
const WINDOW_US = 100_000;
const WINDOW_MS = WINDOW_US / 1000;
/** How often `untilStopped` looks in the tests with `WINDOW_US`: less often than the window. */
const LOOK_MS = 120;

/** Share of the next `ms` the event loop spent working rather than waiting in its poll for sockets and timers. */
async function loopBusyShare(ms: number): Promise<number> {
  const before = performance.eventLoopUtilization();
  await sleep(ms);
  return performance.eventLoopUtilization(before).utilization;
}

/** Waits for polling to end, looking less often than the window (a look is work: it would keep the loop polling). */
async function untilStopped(poll: BusyPoll, everyMs: number): Promise<void> {
  while (poll.isPolling) await sleep(everyMs);
}

/**
 * `count` activities, one every 5 ms: traffic whose quiet stretches are much shorter than the tests' 100 ms windows.
 * Counted, not timed: on a loaded machine the timer can fire only once or twice in 100 ms (the process descheduled),
 * too little traffic to show anything.
 */
async function activityEvery5Ms(poll: BusyPoll, count: number): Promise<void> {
  for (let delivered = 0; delivered < count; delivered++) {
    await sleep(5);
    poll.activity();
  }
}

/**
 * The share of the first 20 ms stretch in which the loop slept most of the time, trying for up to ~2 s: the process's
 * start-up work (loading modules) can keep it busy for a while when the suite runs many test files at once.
 */
async function busyShareOnceIdle(): Promise<number> {
  let share = 1;
  for (let tries = 0; tries < 100 && share >= 0.5; tries++) share = await loopBusyShare(20);
  return share;
}

test('after activity() the loop does not sleep through a quiet stretch shorter than the window, then sleeps again', async () => {
  const idle = await busyShareOnceIdle();
  assert.ok(idle < 0.5, `an idle loop sleeps (busy ${idle})`);
  const poll = new BusyPoll(40_000);
  poll.activity();
  assert.equal(poll.isPolling, true);
  assert.ok((await loopBusyShare(20)) > 0.9, 'a polling loop does not wait in its poll');
  await untilStopped(poll, 60);
  assert.deepEqual(poll.stats, { periods: 1, caught: 0, missed: 1 });
  assert.ok((await loopBusyShare(20)) < 0.5, 'a loop past its window sleeps again');
});

test('activity during polling is caught and keeps the loop polling past the window; other work is not activity', async () => {
  const poll = new BusyPoll(WINDOW_US);
  poll.activity();
  const delivered = 40;
  await activityEvery5Ms(poll, delivered);
  assert.equal(poll.isPolling, true, `still polling 200 ms or more after activity() with a ${WINDOW_MS} ms window`);
  // Every activity while polling is caught.
  assert.ok(poll.stats.caught >= delivered - 1, `caught ${poll.stats.caught} of ${delivered}`);
  assert.equal(poll.stats.missed, 0);
  await untilStopped(poll, LOOK_MS);
  assert.deepEqual(poll.stats, { periods: 1, caught: poll.stats.caught, missed: 1 });

  // Callbacks that work but report no activity (a timer, the collector, an interrupt) keep it polling only for a
  // while: four windows after the last activity.
  const other = new BusyPoll(WINDOW_US);
  other.activity();
  const work = setInterval(() => {
    const until = performance.now() + 0.2;
    while (performance.now() < until);
  }, 5);
  // While the work goes on: ~500 ms here, but the first poll (from which the windows count) can come tens of
  // milliseconds late on a loaded machine, so the test looks until polling stopped, for up to 100 looks.
  for (let looks = 0; looks < 100 && other.isPolling; looks++) await sleep(LOOK_MS);
  const stillPolling = other.isPolling;
  clearInterval(work);
  assert.deepEqual(other.stats, { periods: 1, caught: 0, missed: 1 });
  assert.equal(stillPolling, false);
});

test('a turn of work longer than the window is not a quiet stretch: activity after it is caught', async () => {
  const poll = new BusyPoll(WINDOW_US);
  poll.activity();
  await sleep(5);
  const until = performance.now() + WINDOW_MS * 1.5; // a long commit, say
  while (performance.now() < until);
  await sleep(10);
  poll.activity();
  await sleep(10);
  assert.deepEqual(poll.stats, { periods: 1, caught: 1, missed: 0 });
  await untilStopped(poll, LOOK_MS);
});

test('activity() while polling starts no new period; stop() ends polling for good', async () => {
  const poll = new BusyPoll(WINDOW_US);
  poll.activity();
  poll.activity();
  assert.equal(poll.stats.periods, 1);
  poll.stop();
  await untilStopped(poll, 5);
  poll.activity();
  assert.equal(poll.isPolling, false);
  assert.equal(poll.stats.periods, 1);
  assert.equal(new BusyPoll(0).isPolling, false);
  const off = new BusyPoll(0);
  off.activity();
  assert.equal(off.isPolling, false, 'a window of 0 is off');
});

test('when the quiet stretches outlast the window, only one request in PROBE_EVERY starts polling, until it pays again', async () => {
  const poll = new BusyPoll(WINDOW_US);
  // Each period ends with its stretch missed, 7/8 of the share caught left per miss: after six, polling no longer pays.
  for (let period = 1; period <= 6; period++) {
    poll.activity();
    assert.equal(poll.isPolling, true, `period ${period} starts`);
    await untilStopped(poll, LOOK_MS);
  }
  assert.deepEqual(poll.stats, { periods: 6, caught: 0, missed: 6 });
  for (let i = 1; i < PROBE_EVERY; i++) {
    poll.activity();
    assert.equal(poll.isPolling, false, `arm ${i} while polling does not pay`);
  }
  poll.activity(); // the probe
  assert.equal(poll.isPolling, true);
  assert.equal(poll.stats.periods, 7);
  await activityEvery5Ms(poll, 20); // the traffic changed: its stretches are shorter than the window
  await untilStopped(poll, LOOK_MS);
  poll.activity();
  assert.equal(poll.isPolling, true, 'polling pays again: the next request starts it');
  await untilStopped(poll, LOOK_MS);
});

test('svc serve polls after each request unless SVC_BUSY_POLL_US is 0; the window is checked', async (t) => {
  for (const [window, polls] of [['10000', true], ['0', false]] as const) {
    const dataDir = tempDir(t, 'svc-busy-poll-');
    const server = await startServer(loadConfig({ SVC_LOG_LEVEL: 'silent', SVC_PORT: '0', SVC_BUSY_POLL_US: window }, { dataDir }));
    try {
      const response = await fetch(`${server.address}/health`);
      assert.equal(response.status, 200);
      await response.arrayBuffer();
      assert.equal(server.busyPoll.stats.periods >= 1, polls, `SVC_BUSY_POLL_US=${window}`);
    } finally {
      await server.close();
    }
    await untilStopped(server.busyPoll, 20);
  }
  assert.equal(loadConfig({}).busyPollUs, null, 'unset: the default for the machine');
  assert.equal(loadConfig({ SVC_BUSY_POLL_US: '700' }).busyPollUs, 700);
  for (const bad of ['-1', '10001', '1.5', 'fast']) {
    assert.throws(() => loadConfig({ SVC_BUSY_POLL_US: bad }), ConfigError, bad);
  }
});

test('by default busy polling is on, but off under a CPU quota of less than two CPUs (the spin would use up the quota)', () => {
  assert.equal(DEFAULT_WINDOW_US, 500);
  assert.equal(defaultBusyPollUs(null), DEFAULT_WINDOW_US);
  assert.equal(defaultBusyPollUs(0.5), 0);
  assert.equal(defaultBusyPollUs(1.5), 0);
  assert.equal(defaultBusyPollUs(2), DEFAULT_WINDOW_US);
  assert.equal(defaultBusyPollUs(16), DEFAULT_WINDOW_US);
});
