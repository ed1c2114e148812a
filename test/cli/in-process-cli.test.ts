/**
 * runCli (cli/program.ts), which test/support/in-process-cli.ts runs the commands through: several runs in one process,
 * at once or one after another, each with its own streams (svc's notes from below the CLI included), environment, exit
 * code and program, and none leaving the data directory held or the process changed.
 */
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import test from 'node:test';
import { openStore } from '../../src/store/store.ts';
import { runSvcInProcess } from '../support/in-process-cli.ts';
import { ensureBundle, runSvc, tempDir } from '../support/process.ts';

const names = (stdout: string) => (JSON.parse(stdout) as { keys: Array<{ name: string }> }).keys.map((key) => key.name);

test('runs at once each read their own environment and write their own streams', async (t) => {
  const [first, second] = [tempDir(t), tempDir(t)];
  const created = await Promise.all(
    [first, second].map((dataDir, i) => runSvcInProcess(['keys', 'create', '--name', `key-${i}`, '--json'], { env: { SVC_DATA_DIR: dataDir } })),
  );
  created.forEach((run, i) => {
    assert.equal(run.code, 0, run.stderr);
    assert.equal(JSON.parse(run.stdout).key.name, `key-${i}`);
    assert.equal(run.stderr.match(/not show it again/g)?.length, 1, 'the warning once, on its own run');
  });
  const listed = await Promise.all([first, second].map((dataDir) => runSvcInProcess(['keys', 'list', '--json'], { env: { SVC_DATA_DIR: dataDir } })));
  assert.deepEqual(listed.map((run) => names(run.stdout)), [['key-0'], ['key-1']]);
  assert.equal(process.env.SVC_DATA_DIR, undefined, "the runs' environment is not the process's");
});

test("svc's notes from below the CLI go to the stderr of the run they belong to, not the process's", async (t) => {
  // Two runs at once, each on a data directory under a parent other users may write into: each warns of its own
  // (src/store/data-dir.ts), and the console mailer writes an invitation's e-mail to the run that sent it.
  const dataDirs = ['first', 'second'].map((name) => {
    const shared = join(tempDir(t), name);
    mkdirSync(shared);
    chmodSync(shared, 0o777);
    return join(shared, 'data');
  });
  let processStderr = '';
  const write = process.stderr.write;
  process.stderr.write = ((chunk: string | Uint8Array, ...rest: any[]) => ((processStderr += String(chunk)), write.call(process.stderr, chunk, ...rest))) as typeof write;
  try {
    const runs = await Promise.all(
      dataDirs.map((dataDir, i) => runSvcInProcess(['orgs', 'invite', '--email', `user-${i}@example.com`, '--org', 'default', '--data-dir', dataDir])),
    );
    runs.forEach((run, i) => {
      assert.equal(run.code, 0, run.stderr);
      const other = dataDirs[1 - i]!;
      assert.equal(run.stderr.match(/^svc: warning: .*$/gm)?.length, 1, run.stderr);
      assert.ok(run.stderr.includes(`above the data directory ${dataDirs[i]},`) && !run.stderr.includes(other), run.stderr);
      assert.match(run.stderr, new RegExp(`^svc: e-mail to user-${i}@example\\.com: `, 'm'));
      assert.ok(!run.stderr.includes(`user-${1 - i}@example.com`), run.stderr);
    });
  } finally {
    process.stderr.write = write;
  }
  assert.equal(processStderr, '', "nothing on the process's stderr");
});

test("a run's exit code is its own: a broken chain fails that run alone, the process's code stays as it was", async (t) => {
  const dataDir = tempDir(t);
  assert.equal((await runSvcInProcess(['keys', 'create', '--name', 'a', '--data-dir', dataDir])).code, 0);
  assert.equal((await runSvcInProcess(['keys', 'create', '--name', 'b', '--data-dir', dataDir])).code, 0);
  const store = openStore({ dataDir });
  await store.write((sql) => sql.run("UPDATE audit_events SET target = 'forged' WHERE seq = 1"));
  await store.close();
  const broken = await runSvcInProcess(['audit', '--verify', '--data-dir', dataDir]);
  assert.equal(broken.code, 1, broken.stderr);
  assert.match(broken.stdout, /CHAIN BROKEN at seq 1/);
  assert.equal((await runSvcInProcess(['keys', 'list', '--data-dir', dataDir])).code, 0, 'the next run starts at 0');
  assert.equal(process.exitCode, undefined);
});

test('each run parses with a program of its own, made for its command line', async (t) => {
  const args = ['--data-dir', tempDir(t)];
  assert.equal((await runSvcInProcess(['keys', 'list', ...args])).code, 0);
  // A flag of the command as a value is taken only typed with `=`, which the program reads from the line it was made
  // for (cli/options.ts): made for the run before, it refused this one.
  const created = await runSvcInProcess(['keys', 'create', '--name=--admin', '--json', ...args]);
  assert.equal(created.code, 0, created.stderr);
  assert.equal(JSON.parse(created.stdout).key.name, '--admin');
  assert.equal((await runSvcInProcess(['keys', 'create', '--name', '--admin', ...args])).code, 2, 'untyped, refused as ever');
});

test('a run leaves the data directory free: bin/svc takes it at once, and finds what the run wrote', async (t) => {
  await ensureBundle();
  const dataDir = tempDir(t);
  const listeners = process.stdout.listenerCount('error');
  assert.equal((await runSvcInProcess(['keys', 'create', '--name', 'in-process', '--data-dir', dataDir])).code, 0);
  assert.deepEqual(readdirSync(dataDir).sort(), ['master.key', 'svc.db'], 'no lock left, the data file closed');
  // No wait for an owner: a lock still held would fail it at once.
  const listed = await runSvc(['keys', 'list', '--json', '--data-dir', dataDir], { env: { SVC_OWNER_WAIT_MS: '0' } });
  assert.equal(listed.code, 0, listed.stderr);
  assert.deepEqual(names(listed.stdout), ['in-process']);
  assert.equal(process.stdout.listenerCount('error'), listeners, "the process's streams are bin/svc's to set up, not a run's");
});
