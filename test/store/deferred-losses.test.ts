import assert from 'node:assert/strict';
import test from 'node:test';
import { DeferredWriteLosses, REMINDER_MS, type LossLog } from '../../src/store/deferred-losses.ts';

function capturedLog() {
  const lines: Array<{ level: 'error' | 'warn'; fields: Record<string, unknown>; message: string }> = [];
  const log: LossLog = {
    error: (fields, message) => void lines.push({ level: 'error', fields: fields as Record<string, unknown>, message }),
    warn: (fields, message) => void lines.push({ level: 'warn', fields: fields as Record<string, unknown>, message }),
  };
  return { lines, log };
}

const full = new Error('database or disk is full');

test('a streak of failed commits is logged once, reminded of at most every REMINDER_MS, and summed up when commits succeed again', () => {
  let now = 1_000;
  const losses = new DeferredWriteLosses(() => now);
  const { lines, log } = capturedLog();
  losses.logTo(log);
  for (let i = 0; i < 50; i++) {
    losses.lost({ writes: 2, kinds: { 'run ledger windows': 1, 'cache entries': 1 }, error: full });
    now += 20;
  }
  assert.deepEqual(lines.map((line) => line.level), ['error']);
  assert.deepEqual(lines[0]!.fields, { lostWrites: 2, kinds: { 'run ledger windows': 1, 'cache entries': 1 }, error: 'database or disk is full' });
  now += REMINDER_MS;
  losses.lost({ writes: 1, kinds: { 'session touches': 1 }, error: full });
  losses.lost({ writes: 1, kinds: { 'session touches': 1 }, error: full });
  assert.equal(lines.length, 2);
  assert.match(lines[1]!.message, /still fail/);
  assert.equal(lines[1]!.fields.lostWrites, 101);
  assert.equal(losses.status().streak?.endedAt, null);

  losses.committedAgain();
  losses.committedAgain();
  assert.equal(lines.length, 3);
  assert.equal(lines[2]!.level, 'warn');
  assert.deepEqual(
    { ...lines[2]!.fields, failingMs: undefined },
    { failedCommits: 52, lostWrites: 102, kinds: { 'run ledger windows': 50, 'cache entries': 50, 'session touches': 2 }, failingMs: undefined, error: 'database or disk is full' },
  );
  assert.equal(losses.status().streak?.endedAt, now);

  // A new streak is a new first line.
  losses.lost({ writes: 1, kinds: { 'cache entries': 1 }, error: full });
  assert.equal(lines.length, 4);
  assert.match(lines[3]!.message, /^a commit of the data file failed/);
  assert.deepEqual(losses.status().streak, { since: now, endedAt: null, failedCommits: 1, lostWrites: 1, kinds: { 'cache entries': 1 }, error: 'database or disk is full' });
});

test('nothing lost, nothing told: committedAgain alone logs nothing', () => {
  const losses = new DeferredWriteLosses();
  const { lines, log } = capturedLog();
  losses.logTo(log);
  losses.committedAgain();
  assert.equal(lines.length, 0);
  assert.equal(losses.status().streak, null);
});
