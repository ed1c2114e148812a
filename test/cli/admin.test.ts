/**
 * The admin CLI as a child process (`bin/svc`), against a temp data directory: in-process when no server owns it,
 * through the local socket when `svc serve` does, and taking over the lock a killed server left behind.
 */
import assert from 'node:assert/strict';
import test, { before } from 'node:test';
import { ensureBundle, runSvc, startServe, tempDir } from '../support/process.ts';

before(ensureBundle);

const jsonOf = (text: string) => JSON.parse(text);

test('svc --help and each group --help list every command', async () => {
  const top = await runSvc(['--help']);
  assert.equal(top.code, 0);
  for (const command of ['serve', 'keys', 'settings', 'audit', 'cache']) assert.match(top.stdout, new RegExp(`\\b${command}\\b`));
  const keys = await runSvc(['keys', '--help']);
  for (const command of ['create', 'list', 'revoke', 'mode']) assert.match(keys.stdout, new RegExp(`\\b${command}\\b`));
  const settings = await runSvc(['settings', '--help']);
  for (const command of ['get', 'set']) assert.match(settings.stdout, new RegExp(`\\b${command}\\b`));
  const cache = await runSvc(['cache', '--help']);
  for (const command of ['stats', 'invalidate']) assert.match(cache.stdout, new RegExp(`\\b${command}\\b`));
  const create = await runSvc(['keys', 'create', '--help']);
  for (const flag of ['--name', '--admin', '--app', '--mode', '--data-dir', '--url', '--json']) assert.ok(create.stdout.includes(flag), flag);
  assert.equal((await runSvc(['keys', 'bogus'])).code, 2);
  assert.equal((await runSvc(['keys', 'mode', 'key_x', 'sideways'])).code, 2);
});

test('without a server: keys, settings and audit work in-process on the data directory', async (t) => {
  const dataDir = tempDir(t);
  const args = ['--data-dir', dataDir];
  const created = await runSvc(['keys', 'create', '--name', 'ci', '--admin', '--json', ...args]);
  assert.equal(created.code, 0, created.stderr);
  const { key, token } = jsonOf(created.stdout);
  assert.match(token, /^svc_[A-Za-z0-9_-]{43}$/);

  const table = await runSvc(['keys', 'list', ...args]);
  assert.equal(table.code, 0);
  assert.match(table.stdout, /^ID\s+NAME\s+MODE/m);
  assert.match(table.stdout, new RegExp(`${key.id}\\s+ci\\s+optimize`));
  assert.ok(!table.stdout.includes(token));
  const listed = jsonOf((await runSvc(['keys', 'list', '--json', ...args])).stdout);
  assert.equal(listed.keys.length, 1);
  assert.ok(!JSON.stringify(listed).includes(token));

  assert.equal(jsonOf((await runSvc(['keys', 'mode', key.id, 'observe', '--json', ...args])).stdout).key.mode, 'observe');

  const refused = await runSvc(['keys', 'revoke', key.id, ...args]);
  assert.equal(refused.code, 2, 'no terminal and no --yes: refuse');
  assert.match(refused.stderr, /--yes/);
  assert.equal(jsonOf((await runSvc(['keys', 'list', '--json', ...args])).stdout).keys[0].status, 'active', 'nothing changed');
  const revoked = await runSvc(['keys', 'revoke', key.id, '--yes', '--json', ...args]);
  assert.equal(revoked.code, 0, revoked.stderr);
  assert.equal(jsonOf(revoked.stdout).key.status, 'revoked');

  assert.equal((await runSvc(['settings', 'set', 'retention_days', '7', ...args])).code, 0);
  const got = jsonOf((await runSvc(['settings', 'get', 'retention_days', '--json', ...args])).stdout);
  assert.deepEqual(got, { settings: { retention_days: 7 } });
  const secret = await runSvc(['settings', 'set', 'webhook_secret', '--value-stdin', ...args], { input: 'hush-hush-123\n' });
  assert.equal(secret.code, 0, secret.stderr);
  assert.ok(!secret.stdout.includes('hush-hush-123'));
  const all = await runSvc(['settings', 'get', ...args]);
  assert.match(all.stdout, /webhook_secret\s+\[set\]/);
  const bad = await runSvc(['settings', 'set', 'retention_days', '"soon"', ...args]);
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /retention_days/);
  assert.equal((await runSvc(['settings', 'set', 'no_such_setting', '1', ...args])).code, 1);

  const audit = await runSvc(['audit', '--verify', ...args]);
  assert.equal(audit.code, 0);
  for (const action of ['key.create', 'key.mode_change', 'key.revoke', 'settings.update']) assert.match(audit.stdout, new RegExp(action.replace('.', '\\.')));
  assert.match(audit.stdout, /chain intact/);
  const stats = jsonOf((await runSvc(['cache', 'stats', '--json', ...args])).stdout);
  assert.ok(stats.stats.some((row: { cacheType: string }) => row.cacheType === 'exact_response'));
  assert.equal((await runSvc(['cache', 'invalidate', ...args])).code, 2, 'invalidate needs --type or --all');
  assert.equal(jsonOf((await runSvc(['cache', 'invalidate', '--all', '--yes', '--json', ...args])).stdout).invalidated, 0);
});

test('with a server running: commands go through its local socket; a second serve is refused', async (t) => {
  const dataDir = tempDir(t);
  const server = await startServe(t, dataDir);
  const created = await runSvc(['keys', 'create', '--name', 'via-socket', '--json', '--data-dir', dataDir]);
  assert.equal(created.code, 0, created.stderr);
  const { token } = jsonOf(created.stdout);
  // The key works against the server's TCP port at once: the write went through the running process.
  const models = await fetch(`${server.address}/v1/models`, { headers: { authorization: `Bearer ${token}` } });
  assert.equal(models.status, 200);
  const audit = jsonOf((await runSvc(['audit', '--json', '--data-dir', dataDir])).stdout);
  assert.equal(audit.events[0].action, 'key.create');
  assert.equal(audit.events[0].actor.kind, 'local');

  const second = await runSvc(['serve', '--port', '0', '--data-dir', dataDir]);
  assert.equal(second.code, 1);
  assert.match(second.stderr, /in use by process/);

  server.child.kill('SIGTERM');
  assert.equal(await server.exited, 0);
  const after = jsonOf((await runSvc(['keys', 'list', '--json', '--data-dir', dataDir])).stdout);
  assert.equal(after.keys.length, 1, 'in-process again after a graceful stop');
});

test('a lock left by a killed server is taken over by the next command', async (t) => {
  const dataDir = tempDir(t);
  const server = await startServe(t, dataDir);
  assert.equal((await runSvc(['keys', 'create', '--name', 'before-crash', '--data-dir', dataDir])).code, 0);
  server.child.kill('SIGKILL');
  await server.exited;
  const listed = await runSvc(['keys', 'list', '--json', '--data-dir', dataDir]);
  assert.equal(listed.code, 0, listed.stderr);
  assert.deepEqual(
    jsonOf(listed.stdout).keys.map((key: { name: string }) => key.name),
    ['before-crash'],
  );
  const restarted = await startServe(t, dataDir);
  assert.match(restarted.address, /^http:\/\/127\.0\.0\.1:\d+$/);
});

test('--url talks HTTP with --api-key', async (t) => {
  const dataDir = tempDir(t);
  const server = await startServe(t, dataDir, { SVC_API_KEY: 'bootstrap-token-for-cli-tests-0001' });
  const denied = await runSvc(['keys', 'list', '--url', server.address]);
  assert.equal(denied.code, 1);
  assert.match(denied.stderr, /HTTP 401/);
  const allowed = await runSvc(['keys', 'list', '--json', '--url', server.address, '--api-key', 'bootstrap-token-for-cli-tests-0001']);
  assert.equal(allowed.code, 0, allowed.stderr);
  assert.deepEqual(jsonOf(allowed.stdout).keys, []);
});
