/**
 * svc's log goes to stdout, its notes to stderr. Either one that cannot be written (a log file on a full disk:
 * /dev/full fails every write with ENOSPC) must not stop the gateway: it goes on answering, says so once on stderr
 * when that still works, and stops cleanly on SIGTERM.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import test, { before } from 'node:test';
import { onProcessEnd } from '../support/process-end.ts';
import { ensureBundle, listenOnce, ROOT, startServe, SVC, tempDir } from '../support/process.ts';

before(ensureBundle);

test('a log on stdout that fails to be written (a full disk) leaves svc answering, noted once on stderr', async (t) => {
  const dataDir = tempDir(t);
  const port = await listenOnce();
  const full = openSync('/dev/full', 'w');
  const child = spawn(process.execPath, [SVC, 'serve', '--data-dir', dataDir], {
    cwd: ROOT,
    env: { ...process.env, SVC_HOST: '127.0.0.1', SVC_PORT: String(port), SVC_LOG_LEVEL: 'info' },
    stdio: ['ignore', full, 'pipe'],
  });
  closeSync(full);
  const kill = () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  };
  t.after(onProcessEnd(kill));
  t.after(kill);
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  let running = true;
  void exited.then(() => (running = false));

  const health = async () => (await fetch(`http://127.0.0.1:${port}/health`)).status;
  for (;;) {
    assert.ok(running, `svc serve exited: ${stderr}`);
    if (await health().catch(() => 0)) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  // Every request logs its lines: each write fails.
  for (let i = 0; i < 20; i++) assert.equal(await health(), 200, `request ${i}: ${stderr}`);

  const notes = stderr.split('\n').filter((line) => /\blog\b/i.test(line));
  assert.equal(notes.length, 1, `one note on stderr about the log: ${stderr}`);
  assert.match(notes[0]!, /^svc: writing the log to stdout failed \(ENOSPC\)/);
  child.kill('SIGTERM');
  assert.equal(await exited, 0, `a clean stop: ${stderr}`);
});

test('a stderr that fails to be written (a full disk) leaves svc answering, and a SIGTERM still stops it cleanly', async (t) => {
  const server = await startServe(t, tempDir(t), {}, 'exec 2>/dev/full');
  assert.equal((await fetch(`${server.address}/health`)).status, 200);
  // The stop notes its steps on stderr ("SIGTERM received, ...", "stopped"): each write fails.
  server.child.kill('SIGTERM');
  assert.equal(await server.exited, 0, server.output());
});
