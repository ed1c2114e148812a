/**
 * `svc audit --org <id>` (docs/cli.md): the local operator reads, and verifies, the audit log of any organization,
 * one that was deleted too (docs/accounts.md "Deletion"), in-process on a data directory with no server.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import { runSvcInProcess } from '../support/in-process-cli.ts';
import type { RunResult } from '../support/process.ts';
import { tempDir } from '../support/process.ts';

const ok = (result: RunResult) => {
  assert.equal(result.code, 0, `exit ${result.code}: ${result.stderr}`);
  return result;
};
const jsonOf = (result: RunResult) => JSON.parse(ok(result).stdout);

test('svc audit --org reads and verifies the log of an organization, also once it is deleted', async (t) => {
  const args = ['--data-dir', tempDir(t)];
  ok(await runSvcInProcess(['users', 'create', '--email', 'ada@example.com', '--password-stdin', ...args], { input: 'ada-temp-pass-11\n' }));
  const acme = jsonOf(await runSvcInProcess(['orgs', 'create', '--name', 'Acme', '--owner', 'ada@example.com', '--json', ...args])).org.id;
  ok(await runSvcInProcess(['orgs', 'invite', '--email', 'bob@example.com', '--org', acme, ...args]));

  // An organization that exists: its own log, not the default organization's.
  const live = jsonOf(await runSvcInProcess(['audit', '--org', acme, '--json', ...args])).events.map((event: { action: string }) => event.action);
  assert.deepEqual(live, ['invite.create', 'org.create']);

  ok(await runSvcInProcess(['orgs', 'delete', '--org', acme, '--yes', ...args]));
  const kept = jsonOf(await runSvcInProcess(['audit', '--org', acme, '--verify', '--json', ...args]));
  assert.deepEqual(kept.events.map((event: { action: string }) => event.action), ['org.delete', 'invite.create', 'org.create']);
  assert.equal(kept.events[0].target, acme);
  assert.deepEqual(kept.integrity, { ok: true, count: 3, brokenAt: null });
  const table = ok(await runSvcInProcess(['audit', '--org', acme, '--verify', ...args])).stdout;
  assert.match(table, /^SEQ\s+TIME\s+ACTION.*\n3\s+\S+\s+org\.delete\s+allow\s+kind=local\s+/m);
  assert.match(table, /^chain intact \(3 events\)$/m);
  // Without --org, the default organization's log, where Acme's history is not.
  assert.ok(!ok(await runSvcInProcess(['audit', '--json', ...args])).stdout.includes('org.delete'));

  // An organization that never existed is an API error; an empty --org a usage error, before anything is opened.
  const unknown = await runSvcInProcess(['audit', '--org', 'org_neverexisted', ...args]);
  assert.equal(unknown.code, 1);
  assert.match(unknown.stderr, /HTTP 404 not_found/);
  const empty = await runSvcInProcess(['audit', '--org', '', ...args]);
  assert.equal(empty.code, 2, empty.stderr);
});

test('svc audit --help names --org and that a deleted organization\'s log is read with it', async () => {
  const help = ok(await runSvcInProcess(['audit', '--help'])).stdout;
  assert.match(help, /--org <id>/);
  assert.match(help, /deleted/);
  assert.match(help, /--verify/);
});
