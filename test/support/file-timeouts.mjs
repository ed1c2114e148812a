// The bounds test/run.mjs puts on one test file, in a module of their own so that a test can hold them to their
// contract (test/runner/file-timeouts.test.ts). Plain JavaScript: run.mjs runs without tsx.

/** node's --test-timeout when SVC_TEST_TIMEOUT_MS is unset and the machine is not loaded past its CPUs. */
export const DEFAULT_TEST_TIMEOUT_MS = 120_000;
/** How much the load may raise it: still a bound on a hang. */
export const MAX_LOAD_FACTOR = 4;
/** How long a file may run on past its test timeout before run.mjs kills it, unless SVC_TEST_FILE_TIMEOUT_MS is set. */
export const KILL_AFTER_MS = 180_000;

/**
 * Under node --test the test timeout bounds a whole file, whose child processes take several times longer on a
 * machine loaded past its CPUs (test/cli/accounts.test.ts took 120 s at a load average of 25-40 on 2 cores, 12 s at
 * 4). Unless set, both bounds grow with the load average per CPU (`load`: the 1-minute one when the file starts), at
 * most MAX_LOAD_FACTOR times: a slow but working file passes, a hung one still fails.
 */
export function fileTimeouts({ load, cpus, env }) {
  const configured = Number(env.SVC_TEST_TIMEOUT_MS);
  const factor = configured ? 1 : loadFactor({ load, cpus });
  const test = configured || Math.round(DEFAULT_TEST_TIMEOUT_MS * factor);
  return { factor, test, file: Number(env.SVC_TEST_FILE_TIMEOUT_MS) || test + KILL_AFTER_MS };
}

/** How many times longer than on an idle machine a wait should last: load average per CPU, 1 to MAX_LOAD_FACTOR. */
export function loadFactor({ load, cpus }) {
  return Math.min(MAX_LOAD_FACTOR, Math.max(1, load / cpus));
}
