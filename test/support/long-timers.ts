/**
 * Holding svc's time bounds: while on, every timer of a second or more is set never to fire (and unref'd), so a wait
 * that only such a bound ends (svc's waits on an upstream are seconds long) never ends, and a test can show that what
 * it waits for comes without one, asserting no elapsed time: with such a wait in the way, the test hangs and fails at
 * its timeout. Shorter timers (undici's timer tick, the store's commit window) run as they are. node:test's
 * `mock.timers` is no use here: it swaps clearTimeout too, which then cannot clear the timers undici set before.
 */
import type { TestContext } from 'node:test';

const NEVER_MS = 2 ** 31 - 1;

export function holdLongTimers(t: TestContext): () => void {
  const real = globalThis.setTimeout;
  const held = (callback: (...args: unknown[]) => void, ms?: number, ...args: unknown[]) =>
    (ms ?? 0) >= 1_000 ? real(callback, NEVER_MS, ...args).unref() : real(callback, ms, ...args);
  globalThis.setTimeout = Object.assign(held, { __promisify__: real.__promisify__ }) as typeof setTimeout;
  const restore = () => {
    globalThis.setTimeout = real;
  };
  t.after(restore);
  return restore;
}
