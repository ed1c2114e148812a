/**
 * The bounds on waits for something slow but working (test/support/load-scaled.ts): as set on a machine with CPU to
 * spare, grown with the load average per CPU past one, capped as the file timeouts are (a hang still fails).
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import { MAX_LOAD_FACTOR } from '../support/file-timeouts.mjs';
import { loadScaled } from '../support/load-scaled.ts';

test('a wait keeps its bound on a machine with CPU to spare', () => {
  for (const load of [0, 1, 2]) assert.equal(loadScaled(20_000, { load, cpus: 2 }), 20_000);
});

test('past one per CPU, a wait grows with the load average per CPU, at most as the file timeouts do', () => {
  assert.equal(loadScaled(10_000, { load: 3, cpus: 2 }), 15_000);
  assert.equal(loadScaled(20_000, { load: 6, cpus: 2 }), 60_000);
  assert.equal(loadScaled(20_000, { load: 24, cpus: 2 }), 20_000 * MAX_LOAD_FACTOR, 'capped: a hang still fails');
});

test("without a load given, it is this machine's now", () => {
  const scaled = loadScaled(1_000);
  assert.ok(scaled >= 1_000 && scaled <= 1_000 * MAX_LOAD_FACTOR, String(scaled));
});
