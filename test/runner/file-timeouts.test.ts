/**
 * The bounds test/run.mjs puts on a test file (test/support/file-timeouts.mjs): the defaults on a machine with CPU to
 * spare, grown with the load average per CPU past one (so a slow file on a loaded machine is not cut off), capped (so a
 * hung file still fails), and SVC_TEST_TIMEOUT_MS / SVC_TEST_FILE_TIMEOUT_MS used as set, whatever the load.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import { fileTimeouts } from '../support/file-timeouts.mjs';

const timeouts = (load: number, env: Record<string, string> = {}) => fileTimeouts({ load, cpus: 2, env });

test('a machine with CPU to spare keeps the defaults: 120 s per file, killed 180 s later', () => {
  for (const load of [0, 1, 2]) assert.deepEqual({ ...timeouts(load) }, { factor: 1, test: 120_000, file: 300_000 });
});

test('past one per CPU, the bounds grow with the load average per CPU, at most 4x', () => {
  assert.equal(timeouts(3).test, 180_000);
  assert.equal(timeouts(3).file, 360_000);
  assert.equal(timeouts(6).test, 360_000);
  assert.equal(timeouts(8).test, 480_000);
  assert.equal(timeouts(40).test, 480_000, 'capped: a hung file still fails');
  assert.equal(timeouts(40).file, 660_000);
});

test('SVC_TEST_TIMEOUT_MS and SVC_TEST_FILE_TIMEOUT_MS are used as set, whatever the load', () => {
  assert.equal(timeouts(40, { SVC_TEST_TIMEOUT_MS: '60000' }).test, 60_000);
  assert.equal(timeouts(40, { SVC_TEST_TIMEOUT_MS: '60000' }).file, 240_000);
  assert.equal(timeouts(40, { SVC_TEST_FILE_TIMEOUT_MS: '900000' }).file, 900_000);
  assert.equal(timeouts(0, { SVC_TEST_TIMEOUT_MS: '600000', SVC_TEST_FILE_TIMEOUT_MS: '700000' }).file, 700_000);
});
