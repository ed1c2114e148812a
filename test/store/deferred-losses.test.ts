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
    losses.lost({ writes: 2, kinds: { 'run ledger windows': 1, 'cache entries': 1 }, error: full, commitFailed: true });
    now += 20;
  }
  assert.deepEqual(lines.map((line) => line.level), ['error']);
  assert.deepEqual(lines[0]!.fields, { lostWrites: 2, kinds: { 'run ledger windows': 1, 'cache entries': 1 }, error: 'database or disk is full' });
  now += REMINDER_MS;
  losses.lost({ writes: 1, kinds: { 'session touches': 1 }, error: full, commitFailed: true });
  losses.lost({ writes: 1, kinds: { 'session touches': 1 }, error: full, commitFailed: true });
  assert.equal(lines.length, 2);
  assert.match(lines[1]!.message, /still lose/);
  assert.equal(lines[1]!.fields.lostWrites, 101);
  assert.equal(losses.status().streak?.endedAt, null);

  losses.committedAgain();
  losses.committedAgain();
  assert.equal(lines.length, 3);
  assert.equal(lines[2]!.level, 'warn');
  assert.deepEqual(
    { ...lines[2]!.fields, failingMs: undefined },
    { failedCommits: 52, lostWrites: 102, droppedAlone: 0, refusedWrites: 0, kinds: { 'run ledger windows': 50, 'cache entries': 50, 'session touches': 2 }, failingMs: undefined, error: 'database or disk is full' },
  );
  assert.equal(losses.status().streak?.endedAt, now);

  // A new streak is a new first line.
  losses.lost({ writes: 1, kinds: { 'cache entries': 1 }, error: full, commitFailed: true });
  assert.equal(lines.length, 4);
  assert.match(lines[3]!.message, /^a commit of the data file failed/);
  assert.deepEqual(losses.status().streak, { since: now, endedAt: null, failedCommits: 1, lostWrites: 1, droppedAlone: 0, refusedWrites: 0, kinds: { 'cache entries': 1 }, error: 'database or disk is full' });
});

test('nothing lost, nothing told: committedAgain alone logs nothing', () => {
  const losses = new DeferredWriteLosses();
  const { lines, log } = capturedLog();
  losses.logTo(log);
  losses.committedAgain();
  assert.equal(lines.length, 0);
  assert.equal(losses.status().streak, null);
});

test('writes dropped alone from commits that succeed make a streak too: logged once, counted apart from failed commits, summed up when a commit drops none', () => {
  let now = 1_000;
  const losses = new DeferredWriteLosses(() => now);
  const { lines, log } = capturedLog();
  losses.logTo(log);
  const fullInsert = new Error('database or disk is full');
  losses.lost({ writes: 2, kinds: { 'cache entries': 2 }, error: fullInsert, commitFailed: false });
  now += 20;
  losses.lost({ writes: 3, kinds: { 'cache entries': 3 }, error: fullInsert, commitFailed: false });
  now += 20;
  losses.lost({ writes: 1, kinds: { 'run ledger windows': 1 }, error: full, commitFailed: true });
  assert.equal(lines.length, 1);
  assert.equal(lines[0]!.level, 'error');
  assert.match(lines[0]!.message, /^deferred writes failed alone and were dropped/);
  assert.deepEqual(losses.status().streak, {
    since: 1_000,
    endedAt: null,
    failedCommits: 1,
    lostWrites: 6,
    droppedAlone: 5,
    refusedWrites: 0,
    kinds: { 'cache entries': 5, 'run ledger windows': 1 },
    error: 'database or disk is full',
  });
  losses.committedAgain();
  assert.equal(lines.length, 2);
  assert.equal(lines[1]!.level, 'warn');
  assert.equal(lines[1]!.fields.droppedAlone, 5);
});

test('failed commits of awaited writes only make a streak without a line of their own (their requests are logged), until a deferred write is lost', () => {
  let now = 1_000;
  const losses = new DeferredWriteLosses(() => now);
  const { lines, log } = capturedLog();
  losses.logTo(log);
  losses.lost({ writes: 0, refusedWrites: 2, kinds: {}, error: full, commitFailed: true });
  now += 20;
  losses.lost({ writes: 0, refusedWrites: 1, kinds: {}, error: full, commitFailed: true });
  assert.equal(lines.length, 0);
  assert.deepEqual(losses.status().streak, { since: 1_000, endedAt: null, failedCommits: 2, lostWrites: 0, droppedAlone: 0, refusedWrites: 3, kinds: {}, error: 'database or disk is full' });
  // The streak's first lost deferred write is its first line.
  losses.lost({ writes: 1, refusedWrites: 1, kinds: { 'run ledger windows': 1 }, error: full, commitFailed: true });
  assert.equal(lines.length, 1);
  assert.match(lines[0]!.message, /^a commit of the data file failed: deferred writes lost/);
  losses.committedAgain();
  assert.equal(lines[1]!.message, 'commits of the data file succeed again; the deferred writes of the failed ones are lost');
  assert.equal(lines[1]!.fields.refusedWrites, 4);
  assert.equal(lines[1]!.fields.failedCommits, 3);
});
