/**
 * Bounds on waits for something slow but working (a child process starting, an e-mail sent after the answer, a page
 * drawn, a client waiting for its answer). On a machine loaded past its CPUs that takes several times longer (CI: 2
 * cores at a load of 24 while `npm test` runs files three at a time), so the bounds grow like the file timeouts
 * (test/support/file-timeouts.mjs): a slow but working test passes, a hung one still fails. Not for sleeps, which
 * would make a quiet machine slower, nor for a deadline the test checks svc honours.
 */
import { availableParallelism, loadavg } from 'node:os';
import { loadFactor } from './file-timeouts.mjs';

/** `ms` times the load factor when called (the 1-minute load average per CPU, 1 to MAX_LOAD_FACTOR times). */
export function loadScaled(ms: number, machine = { load: loadavg()[0]!, cpus: availableParallelism() }): number {
  return Math.round(ms * loadFactor(machine));
}
