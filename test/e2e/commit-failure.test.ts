/**
 * A commit of the gateway's deferred writes that fails (a full disk) loses runs already answered: by design, but not
 * silently. svc logs it once per streak of failing commits, sums it up when commits succeed again, and readiness
 * says so meanwhile. The full disk is the data file's own: a file size limit of 0 (RLIMIT_FSIZE, no root needed) set
 * on the running `svc serve`, so every commit's write to the log fails.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import test, { before } from 'node:test';
import { ensureBundle, startServe, tempDir, type ServeProcess } from '../support/process.ts';
import { until } from '../support/tmux.ts';

before(ensureBundle);

const BOOT = 'bootstrap-token-commit-failure-001';

/** One buffered chat completion through svc (the built-in mock model answers): its run is a deferred write. */
async function ask(address: string, content: string): Promise<void> {
  const response = await fetch(`${address}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${BOOT}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }] }),
  });
  assert.equal(response.status, 200);
  await response.arrayBuffer();
}

interface StorageItem {
  status: string;
  message: string;
  action: string | null;
}

async function storageItem(address: string): Promise<StorageItem> {
  const response = await fetch(`${address}/api/v1/readiness`, { headers: { authorization: `Bearer ${BOOT}` } });
  assert.equal(response.status, 200);
  const readiness = (await response.json()) as { items: Array<StorageItem & { id: string }> };
  const item = readiness.items.find((candidate) => candidate.id === 'storage');
  assert.ok(item, 'readiness has a storage item');
  return item;
}

/** Ask until readiness's storage item has `status` (a commit's outcome follows its answer within a window). */
async function askUntil(server: ServeProcess, status: string, label: string): Promise<StorageItem> {
  for (let i = 0; i < 200; i++) {
    await ask(server.address, `${label} ${i}`);
    const item = await storageItem(server.address);
    if (item.status === status) return item;
  }
  assert.fail(`readiness's storage item never became ${status}: ${server.output()}`);
}

/** svc's JSON log lines whose message matches `pattern`. */
function logLines(server: ServeProcess, pattern: RegExp): Array<Record<string, unknown>> {
  return server
    .output()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((line) => typeof line.msg === 'string' && pattern.test(line.msg));
}

/**
 * The log lines matching `pattern`, once one has come: svc writes a line before its next answer, but its pipe to this
 * process may be read after that answer's socket.
 */
async function loggedOnce(server: ServeProcess, pattern: RegExp): Promise<Array<Record<string, unknown>>> {
  return until(() => logLines(server, pattern), (lines) => lines.length > 0, `a log line matching ${pattern}`, server.output);
}

test('deferred writes lost to a full disk are logged once per streak, summed up when commits succeed again, and flagged by readiness meanwhile', async (t) => {
  const dataDir = tempDir(t);
  const server = await startServe(t, dataDir, { SVC_API_KEY: BOOT, SVC_LOG_LEVEL: 'warn' });
  await ask(server.address, 'before');
  assert.equal((await storageItem(server.address)).status, 'ready');

  const pid = String(server.child.pid);
  // No byte may be written to any file: a limit at the files' sizes let a commit through whenever a checkpoint had
  // restarted the log from its beginning, ending the streak early. The soft limit only: raising it needs no privilege.
  execFileSync('prlimit', ['--pid', pid, '--fsize=0:unlimited']);
  const failing = await askUntil(server, 'attention', 'full');
  assert.match(failing.message, /deferred write/);
  assert.match(failing.message, /run ledger/);
  // More answers, more failing commits: still one line.
  for (let i = 0; i < 20; i++) await ask(server.address, `still full ${i}`);
  const lost = await loggedOnce(server, /^a commit of the data file failed: deferred writes lost/);
  assert.equal(lost.length, 1, server.output());
  assert.equal(lost[0]!.level, 50);
  assert.ok((lost[0]!.lostWrites as number) >= 1);
  assert.ok((lost[0]!.kinds as Record<string, number>)['run ledger windows']! >= 1);
  assert.match(lost[0]!.error as string, /disk|I\/O|full|large/i);

  execFileSync('prlimit', ['--pid', pid, '--fsize=unlimited:unlimited']);
  const recovered = await askUntil(server, 'info', 'free');
  assert.match(recovered.message, /lost/);
  const summary = await loggedOnce(server, /^commits of the data file succeed again/);
  assert.equal(summary.length, 1, server.output());
  assert.ok((summary[0]!.lostWrites as number) > (lost[0]!.lostWrites as number));
  assert.ok((summary[0]!.failedCommits as number) >= 2);
  assert.equal(logLines(server, /^a commit of the data file failed: deferred writes lost/).length, 1);
});

/** One key created through the management API: its status (a commit of its own, awaited before the answer). */
async function createKey(address: string, name: string): Promise<number> {
  const response = await fetch(`${address}/api/v1/keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${BOOT}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name }),
  });
  await response.arrayBuffer();
  return response.status;
}

test('management writes refused by a full disk, with no gateway traffic, flag readiness meanwhile and are summed up when commits succeed again', async (t) => {
  const dataDir = tempDir(t);
  const server = await startServe(t, dataDir, { SVC_API_KEY: BOOT, SVC_LOG_LEVEL: 'warn' });
  assert.equal(await createKey(server.address, 'before'), 201);
  assert.equal((await storageItem(server.address)).status, 'ready');

  const pid = String(server.child.pid);
  execFileSync('prlimit', ['--pid', pid, '--fsize=0:unlimited']);
  for (let i = 0; i < 3; i++) assert.equal(await createKey(server.address, `full ${i}`), 500);
  const failing = await storageItem(server.address);
  assert.equal(failing.status, 'attention', failing.message);
  assert.match(failing.message, /3 management write\(s\) answered with an error/);
  assert.match(failing.message, /3 failed commit\(s\)/);
  assert.match(failing.message, /disk I\/O error/);
  // Each refused request is logged with its cause; the streak adds no line of deferred writes lost.
  assert.equal(logLines(server, /^a commit of the data file failed/).length, 0, server.output());

  execFileSync('prlimit', ['--pid', pid, '--fsize=unlimited:unlimited']);
  assert.equal(await createKey(server.address, 'free'), 201);
  const recovered = await storageItem(server.address);
  assert.equal(recovered.status, 'info', recovered.message);
  assert.match(recovered.message, /3 management write\(s\) answered with an error/);
  const summary = await loggedOnce(server, /^commits of the data file succeed again$/);
  assert.equal(summary[0]!.refusedWrites, 3);
  assert.equal(summary[0]!.lostWrites, 0);
});
