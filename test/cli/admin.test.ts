/**
 * The admin CLI on a temp data directory with no server: every command runs in-process, taking the directory's lock
 * for its duration. test/cli/server.test.ts covers the local socket. Most commands here run inside the test process
 * (runSvcInProcess: the output and the exit code are what they test); each command group, and what is a process's
 * (the working directory, a closed pipe, svc serve, the lock between processes, a real stdin), also runs as bin/svc.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test, { before, describe } from 'node:test';
import { MIGRATIONS } from '../../src/store/migrations.ts';
import { openStore } from '../../src/store/store.ts';
import { runSvcInProcess } from '../support/in-process-cli.ts';
import { ensureBundle, runSvc, SVC, suiteCleanups, tempDir } from '../support/process.ts';

before(ensureBundle);

// The file's tests (and a flow's stages, one after another, as a group) run at once: each is a run of child
// processes, seconds each on a loaded machine, and the test timeout applies to the whole file under node --test.
describe('the admin CLI', { concurrency: true }, () => {
  const jsonOf = (text: string) => JSON.parse(text);

  test('svc --help and each group --help list every command and flag', async () => {
    const [top, keys, settings, create, audit, set, revoke] = await Promise.all(
      [[], ['keys'], ['settings'], ['keys', 'create'], ['audit'], ['settings', 'set'], ['keys', 'revoke']].map((argv) => runSvcInProcess([...argv, '--help'])),
    );
    assert.equal(top!.code, 0);
    for (const command of ['serve', 'keys', 'settings', 'audit', 'cache']) assert.match(top!.stdout, new RegExp(`\\b${command}\\b`));
    for (const text of ['SVC_BASE_URL', 'SVC_DATA_DIR', 'local socket', 'Exit codes']) assert.ok(top!.stdout.includes(text), text);
    for (const command of ['create', 'list', 'revoke', 'mode']) assert.match(keys!.stdout, new RegExp(`\\b${command}\\b`));
    for (const command of ['get', 'set']) assert.match(settings!.stdout, new RegExp(`\\b${command}\\b`));
    for (const flag of ['--name', '--admin', '--app', '--mode', '--data-dir', '--url', '--api-key', '--json']) assert.ok(create!.stdout.includes(flag), flag);
    for (const flag of ['--limit', '--before', '--decision', '--verify', '--json']) assert.ok(audit!.stdout.includes(flag), flag);
    assert.ok(set!.stdout.includes('--value-stdin'));
    assert.ok(revoke!.stdout.includes('--yes'));
  });

  test('usage errors exit 2 before touching the data directory', async (t) => {
    const args = ['--data-dir', tempDir(t)];
    // `bin`: through bin/svc, for the one command group (cache) no other test runs there.
    const usage = async (argv: string[], what: string, options: { input?: string; env?: Record<string, string>; stderr?: RegExp; bin?: boolean } = {}) => {
      const result = await (options.bin ? runSvc : runSvcInProcess)(argv, options);
      assert.equal(result.code, 2, `${what}: ${result.stderr}`);
      if (options.stderr) assert.match(result.stderr, options.stderr, what);
    };
    // Each is refused before the data directory is opened, so they cannot disturb each other: run at once.
    await Promise.all([
      usage([], 'no command'),
      usage(['keys', 'bogus'], 'keys bogus'),
      usage(['keys', 'mode', 'key_x', 'sideways', ...args], 'keys mode sideways'),
      usage(['keys', 'create', ...args], '--name is required'),
      usage(['keys', 'list', '--offset', 'abc', ...args], '--offset abc'),
      usage(['audit', '--decision', 'maybe', ...args], '--decision maybe'),
      // Setting keys are svc's own list: an unknown one is refused before the data directory is opened.
      usage(['settings', 'set', 'no_such_setting', '1', ...args], 'settings set no_such_setting', { stderr: /'no_such_setting' is invalid.*must be one of .*retention_days/ }),
      usage(['settings', 'get', 'no_such_setting', ...args], 'settings get no_such_setting', { stderr: /'no_such_setting' is invalid.*must be one of .*retention_days/ }),
      // An empty value (a script's unset variable) is refused, not sent, nor read as the option left out.
      ...[
        ['keys', 'create', '--name', ''],
        ['keys', 'create', '--name', 'ci', '--app', ''],
        ['keys', 'mode', '', 'observe'],
        ['keys', 'revoke', '', '--yes'],
        ['keys', 'list', '--url', 'http://127.0.0.1:1', '--api-key', ''],
        // An empty --url was read as none: the command acted on the data directory, even with SVC_BASE_URL set.
        ['keys', 'list', '--url', ''],
        ['keys', 'list', '--url='],
        ['--url=', 'keys', 'list'],
        ['runs', '--no-tui', '--model', ''],
      ].map((bad) => usage([...bad, ...args], bad.join(' '), { stderr: /must not be empty/ })),
      usage(['keys', 'list', '--url', '', ...args], '--url "" with SVC_BASE_URL set', { env: { SVC_BASE_URL: 'http://127.0.0.1:1' }, stderr: /must not be empty/ }),
      // A key id has a known form (key_...): a key's name in its place is refused before any request.
      ...[['keys', 'mode', 'ci', 'observe'], ['keys', 'revoke', 'ci', '--yes']].map((bad) =>
        usage([...bad, ...args], bad.join(' '), { stderr: /'ci' is invalid.*must be a key id \(key_\.\.\.\)/ }),
      ),
      // The prefix alone is no id either (a variable cut short), refused before any request.
      usage(['keys', 'revoke', 'key_', '--yes', ...args], 'keys revoke key_', { stderr: /'key_' is invalid.*must be a key id \(key_\.\.\.\)/ }),
      // Cache tiers are svc's own list: an unknown one, or --all with a tier, is refused before any request.
      usage(['cache', 'invalidate', '--type', 'bogus', '-y', ...args], '--type bogus', { stderr: /--type.*must be one of exact_response, /, bin: true }),
      usage(['cache', 'invalidate', '--all', '--type', 'exact_response', '-y', ...args], '--all with --type', { stderr: /--all.*cannot be combined/ }),
      usage(['cache', 'invalidate', '--type', 'exact_response', '--prefix', '', '-y', ...args], '--prefix empty', { stderr: /--prefix.*must not be empty/ }),
      // The server's key-prefix rule (SPEC 8), checked before the confirmation, not answered 400 after it.
      ...[' a', 'a\n', 'x'.repeat(513)].map((prefix) =>
        usage(['cache', 'invalidate', '--type', 'exact_response', '--prefix', prefix, '-y', ...args], `--prefix ${JSON.stringify(prefix.slice(0, 8))}`, {
          stderr: /--prefix[^]*is invalid\. must be non-empty, without surrounding whitespace, and at most 512 characters/,
        }),
      ),
      usage(['keys', 'list', '--api-key', 'svc_x', ...args], '--api-key without --url', { stderr: /--api-key needs --url/ }),
      usage(['settings', 'set', 'retention_days', '3', '--value-stdin', ...args], 'a value and --value-stdin', { input: '4' }),
      // An empty stdin (an unset variable piped in) holds no value: refused as --password-stdin's is, not sent as "".
      ...['', '\n'].map((input) =>
        usage(['settings', 'set', 'webhook_secret', '--value-stdin', ...args], `--value-stdin ${JSON.stringify(input)}`, { input, stderr: /stdin held no value/ }),
      ),
      // Page sizes past the endpoint's limit, and URLs that are not http(s), are usage errors too (not API errors).
      ...[['keys', 'list', '--limit', '201'], ['users', 'list', '--limit', '0'], ['orgs', 'list', '--limit', '201'], ['audit', '--limit', '501'], ['runs', '--no-tui', '--limit', '201']].map((bad) =>
        usage([...bad, ...args], bad.join(' '), { stderr: /must be an integer from 1 to (200|500)/ }),
      ),
      // --url and SVC_BASE_URL are one value, checked by one parser (cli/connection.ts): each form through --url, and
      // the variable once.
      ...['http://[::1', 'ftp://example.com', 'localhost:8787'].map((url) => usage(['keys', 'list', '--url', url, ...args], url)),
      usage(['keys', 'list', ...args], 'SVC_BASE_URL=localhost:8787', { env: { SVC_BASE_URL: 'localhost:8787' } }),
    ]);
    assert.deepEqual(readdirSync(args[1]!), [], 'the data directory was not touched');
  });

  test('svc runs --since takes the forms svc takes; any other text is a usage error, not a date of 2001', async (t) => {
    const dataDir = tempDir(t);
    // Date.parse alone reads 1.5 as a day of 2001 and rolls 2026-02-30 over into March; none may reach the API as a
    // filter. --since is resolveSince's, whose every form, taken or refused, test/tui/state.test.ts checks in-process:
    // here one of each kind shows the command takes them as it does (those taken through bin/svc).
    const bad = ['1.5', '2026-02-30'];
    await Promise.all(
      bad.map(async (since) => {
        const result = await runSvcInProcess(['runs', '--no-tui', '--since', since, '--data-dir', dataDir]);
        assert.equal(result.code, 2, `--since ${since}: ${result.stderr}`);
        assert.match(result.stderr, /--since <time>.* is invalid/, since);
      }),
    );
    assert.deepEqual(readdirSync(dataDir), [], 'refused before the data directory was touched');
    for (const since of ['2026-03-07', '2h']) {
      const result = await runSvc(['runs', '--no-tui', '--json', '--since', since, '--data-dir', dataDir]);
      assert.equal(result.code, 0, `--since ${since}: ${result.stderr}`);
    }
  });

  test('a --url or SVC_BASE_URL holding credentials, in its user info, query or fragment, is a usage error that does not echo them', async (t) => {
    const args = ['--data-dir', tempDir(t)];
    const urls = ['http://ops:hunter2-secret@127.0.0.1:1', 'ftp://ops:hunter2-secret@127.0.0.1:1', 'http://hunter2-secret@127.0.0.1:1'];
    // A query or a fragment would swallow the API's paths; a link copied from a browser may carry a token there.
    const withQuery = ['http://127.0.0.1:1/?token=hunter2-secret', 'http://127.0.0.1:1/v1?api_key=hunter2-secret&x=1', 'http://127.0.0.1:1/#access_token=hunter2-secret'];
    // Refused before anything is opened: run at once.
    // --url and SVC_BASE_URL are one value, checked and masked by one parser (cli/connection.ts): the variable once.
    const results = await Promise.all([
      ...urls.map((url) => runSvcInProcess(['keys', 'list', '--url', url, ...args])),
      runSvcInProcess(['keys', 'list', ...args], { env: { SVC_BASE_URL: urls[0]! } }),
      ...withQuery.map((url) => runSvcInProcess(['keys', 'list', '--url', url, ...args])),
    ]);
    results.forEach((result) => {
      assert.equal(result.code, 2, result.stderr);
      assert.match(result.stderr, /^svc: (--url|SVC_BASE_URL) must/m);
      assert.ok(!result.stderr.includes('hunter2-secret'), result.stderr);
    });
    assert.match(results.at(-3)!.stderr, /without a query or fragment, .*\(got "http:\/\/127\.0\.0\.1:1\/\?\*\*\*"\)/);
  });

  test("an empty --data-dir (a script's unset variable) is a usage error, not the working directory", async (t) => {
    const cwd = tempDir(t);
    for (const args of [['keys', 'list'], ['settings', 'get'], ['serve', '--port', '0']]) {
      const result = await runSvc([...args, '--data-dir', ''], { cwd });
      assert.equal(result.code, 2, `${args.join(' ')}: ${result.stderr}`);
      assert.match(result.stderr, /--data-dir <dir>' argument '' is invalid\. must not be empty/);
      assert.deepEqual(readdirSync(cwd), [], 'nothing written in the working directory');
    }
  });

  test('a data file a newer svc migrated is refused by the commands and by svc serve, and left as it was', async (t) => {
    const dataDir = tempDir(t);
    const newer = { version: 10_000, name: 'from_a_newer_svc', sql: 'CREATE TABLE newer_one (id TEXT)' };
    await openStore({ dataDir, migrations: [...MIGRATIONS, newer] }).close();
    const before = readFileSync(join(dataDir, 'svc.db'));
    for (const args of [['keys', 'create', '--name', 'x'], ['serve', '--port', '0']]) {
      const result = await runSvc([...args, '--data-dir', dataDir]);
      assert.equal(result.code, 1, result.stderr);
      assert.match(result.stderr, /^svc: the data file was written by a newer svc: it holds schema migration 10000/m);
      assert.deepEqual(readdirSync(dataDir), ['svc.db'], 'no lock, log or engine lock left behind');
      assert.ok(readFileSync(join(dataDir, 'svc.db')).equals(before), 'the data file is unchanged');
    }
  });

  test('output into a pipe whose reader has gone (svc audit --json | head) ends quietly, not with a stack trace', async (t) => {
    const dataDir = tempDir(t);
    assert.equal((await runSvc(['keys', 'create', '--name', 'k', '--data-dir', dataDir])).code, 0);
    for (const args of [['audit', '--json'], ['keys', 'list']]) {
      const child = spawn(process.execPath, [SVC, ...args, '--data-dir', dataDir], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, SVC_LOG_LEVEL: 'silent' } });
      child.stdout.destroy(); // the reader is gone before svc writes: its first write fails with EPIPE
      let stderr = '';
      child.stderr.on('data', (chunk) => (stderr += chunk));
      const code = await new Promise((resolve) => child.on('close', resolve));
      assert.equal(stderr, '', args.join(' '));
      assert.equal(code, 0, args.join(' '));
    }
    assert.deepEqual(readdirSync(dataDir).sort(), ['master.key', 'svc.db'], 'the data file closed as usual');
  });

  // Each command here opens the data file, one after another (and the ones through bin/svc start a node): on a loaded
  // machine seconds each. So a flow's stages are tests of their own, on one data directory, each within the test timeout.
  describe('keys work in-process on the data directory, each change audited', { concurrency: 1 }, () => {
    const dataDir = join(tempDir(suiteCleanups()), 'not-yet-created');
    const args = ['--data-dir', dataDir];
    let key: { id: string };

    test('create, then list: a table, the JSON and a page', async () => {
        const created = await runSvcInProcess(['keys', 'create', '--name', 'ci', '--admin', '--json', ...args]);
        assert.equal(created.code, 0, created.stderr);
        const { token } = jsonOf(created.stdout);
        key = jsonOf(created.stdout).key;
        assert.match(token, /^svc_[A-Za-z0-9_-]{43}$/);
        assert.match(created.stderr, /not show it again/);
        const human = await runSvcInProcess(['keys', 'create', '--name', 'web', '--app', 'shop', '--mode', 'observe', ...args]);
        assert.equal(human.code, 0, human.stderr);
        assert.match(human.stdout, /^token: svc_/m);
        assert.match(human.stdout, /\bweb\s+observe\s+shop\b/);

        const table = await runSvcInProcess(['keys', 'list', ...args]);
        assert.equal(table.code, 0);
        assert.match(table.stdout, /^ID\s+NAME\s+MODE\s+APP\s+ADMIN\s+STATUS\s+CREATED$/m);
        assert.match(table.stdout, new RegExp(`${key.id}\\s+ci\\s+optimize\\s+-\\s+true\\s+active`));
        assert.ok(!table.stdout.includes(token));
        const listed = jsonOf((await runSvcInProcess(['keys', 'list', '--json', ...args])).stdout);
        assert.equal(listed.keys.length, 2);
        assert.equal(listed.pagination.total, 2);
        assert.ok(!JSON.stringify(listed).includes(token));
        const page = await runSvcInProcess(['keys', 'list', '--limit', '1', ...args]);
        assert.match(page.stderr, /--offset 1/);
    });

    test('mode and revoke (refused without --yes), each audited', async () => {
        assert.equal(jsonOf((await runSvcInProcess(['keys', 'mode', key.id, 'observe', '--json', ...args])).stdout).key.mode, 'observe');
        const missing = await runSvcInProcess(['keys', 'mode', 'key_000000000000000000000000', 'observe', ...args]);
        assert.equal(missing.code, 1);
        assert.match(missing.stderr, /^svc: PATCH \/api\/v1\/keys\/key_0+: HTTP 404 \w+: /m);

        const refused = await runSvcInProcess(['keys', 'revoke', key.id, ...args]);
        assert.equal(refused.code, 2, 'no terminal and no --yes: refuse');
        assert.match(refused.stderr, /--yes/);
        assert.equal(jsonOf((await runSvcInProcess(['keys', 'list', '--json', ...args])).stdout).keys.find((k: { id: string }) => k.id === key.id).status, 'active');
        const revoked = await runSvcInProcess(['keys', 'revoke', key.id, '--yes', ...args]);
        assert.equal(revoked.code, 0, revoked.stderr);
        assert.match(revoked.stdout, new RegExp(`${key.id}.*revoked`));

        const keyActions = jsonOf((await runSvcInProcess(['audit', '--json', ...args])).stdout).events.map((event: { action: string }) => event.action);
        for (const action of ['key.create', 'key.mode_change', 'key.revoke']) assert.ok(keyActions.includes(action), action);
    });
  });

  describe('settings and audit work in-process on the data directory', { concurrency: 1 }, () => {
    const args = ['--data-dir', tempDir(suiteCleanups())];

    test('settings set and get: a number, a map, a word', async () => {
        assert.equal((await runSvcInProcess(['keys', 'create', '--name', 'ci', ...args])).code, 0);
        assert.equal((await runSvcInProcess(['settings', 'set', 'retention_days', '7', ...args])).code, 0);
        assert.deepEqual(jsonOf((await runSvcInProcess(['settings', 'get', 'retention_days', '--json', ...args])).stdout), { settings: { retention_days: 7 } });
        const map = await runSvcInProcess(['settings', 'set', 'model_substitutions', '{"gpt-4o":"gpt-4o-mini"}', '--json', ...args]);
        assert.deepEqual(jsonOf(map.stdout), { settings: { model_substitutions: { 'gpt-4o': 'gpt-4o-mini' } } });
        const word = await runSvcInProcess(['settings', 'set', 'semantic_cache', 'shadow', '--json', ...args]);
        assert.equal(jsonOf(word.stdout).settings.semantic_cache, 'shadow', 'not JSON: taken as a string');
        // A setting of a feature this build has not (SPEC 2.4) is saved, and the operator told it changes nothing yet;
        // one svc acts on is not.
        const dlp = await runSvcInProcess(['settings', 'set', 'streaming_dlp', 'true', ...args]);
        assert.equal(dlp.code, 0, dlp.stderr);
        assert.match(dlp.stdout, /streaming_dlp\s+true/);
        assert.match(dlp.stderr, /^svc: streaming_dlp is saved; this build of svc does not act on it yet/m);
        assert.equal((await runSvcInProcess(['settings', 'set', 'retention_days', '7', ...args])).stderr, '');
    });

    test('a secret setting: refused in argv, taken from stdin, shown as [set], cleared', async () => {
        const inArgv = await runSvcInProcess(['settings', 'set', 'webhook_secret', 'hush-hush-123', ...args]);
        assert.equal(inArgv.code, 2, 'a secret on the command line is refused');
        assert.match(inArgv.stderr, /--value-stdin/);
        // Through bin/svc: the secret comes down a real pipe.
        const secret = await runSvc(['settings', 'set', 'webhook_secret', '--value-stdin', ...args], { input: '{"looks":"like json"}\n' });
        assert.equal(secret.code, 0, secret.stderr);
        assert.ok(!secret.stdout.includes('looks'));
        assert.match(secret.stdout, /webhook_secret\s+\[set\]/);
        const all = await runSvcInProcess(['settings', 'get', ...args]);
        assert.match(all.stdout, /^KEY\s+VALUE$/m);
        assert.match(all.stdout, /webhook_secret\s+\[set\]/);
        assert.match(all.stdout, /retention_days\s+7/);
        assert.equal(jsonOf((await runSvcInProcess(['settings', 'set', 'webhook_secret', 'null', '--json', ...args])).stdout).settings.webhook_secret, null);
    });

    test('a bad value and an unknown key are refused; the audit log holds the changes, its chain intact', async () => {
        const bad = await runSvcInProcess(['settings', 'set', 'retention_days', '"soon"', ...args]);
        assert.equal(bad.code, 1);
        assert.match(bad.stderr, /^svc: .*retention_days/m);

        const audit = await runSvcInProcess(['audit', '--verify', ...args]);
        assert.equal(audit.code, 0);
        assert.match(audit.stdout, /^SEQ\s+TIME\s+ACTION\s+DECISION\s+ACTOR\s+TARGET$/m);
        for (const action of ['key.create', 'settings.update']) assert.ok(audit.stdout.includes(action), action);
        assert.match(audit.stdout, /chain intact/);
        const events = jsonOf((await runSvcInProcess(['audit', '--json', '--limit', '2', ...args])).stdout).events;
        assert.equal(events.length, 2);
        assert.equal(events[0].actor.kind, 'local');
    });
  });

  describe('svc audit pages to older events with --before, the seq stderr names after a page that has more', { concurrency: 1 }, () => {
    const args = ['--data-dir', tempDir(suiteCleanups())];

    test('three events, newest first', async () => {
      for (const name of ['a', 'b', 'c']) assert.equal((await runSvcInProcess(['keys', 'create', '--name', name, ...args])).code, 0);
      const all = jsonOf((await runSvcInProcess(['audit', '--json', ...args])).stdout).events.map((event: { seq: number }) => event.seq);
      assert.deepEqual(all, [3, 2, 1]);
    });

    test('pages of two: --before the seq stderr names, and no next page named after the last', async () => {
      const first = await runSvcInProcess(['audit', '--limit', '2', ...args]);
      assert.equal(first.code, 0, first.stderr);
      assert.match(first.stderr, /older events: --before 2\b/);
      const second = await runSvcInProcess(['audit', '--limit', '2', '--before', '2', '--json', ...args]);
      assert.equal(second.code, 0, second.stderr);
      const page = jsonOf(second.stdout);
      assert.deepEqual(page.events.map((event: { seq: number }) => event.seq), [1]);
      assert.deepEqual(page.window, { limit: 2, count: 1, hasMore: false, nextBefore: null });
      const last = await runSvcInProcess(['audit', '--limit', '2', '--before', '2', ...args]);
      assert.equal(last.stderr, '', 'the last page names no next one');
      assert.equal((await runSvcInProcess(['audit', '--before', '0', ...args])).code, 2, 'a seq is at least 1');
    });
  });

  test('a tampered audit chain makes svc audit --verify exit 1, with --json too (a script reads the code)', async (t) => {
    const dataDir = tempDir(t);
    for (const name of ['a', 'b', 'c']) assert.equal((await runSvcInProcess(['keys', 'create', '--name', name, '--data-dir', dataDir])).code, 0);
    const store = openStore({ dataDir });
    await store.write((sql) => sql.run("UPDATE audit_events SET target = 'forged' WHERE seq = 2"));
    await store.close();
    // Through bin/svc: the code a completed command sets is the process's exit code.
    const table = await runSvc(['audit', '--verify', '--data-dir', dataDir]);
    assert.match(table.stdout, /^CHAIN BROKEN at seq 2$/m);
    assert.equal(table.code, 1);
    const asJson = await runSvcInProcess(['audit', '--verify', '--json', '--data-dir', dataDir]);
    const { ok, brokenAt } = jsonOf(asJson.stdout).integrity;
    assert.deepEqual({ ok, brokenAt }, { ok: false, brokenAt: 2 }, 'stdout is the JSON alone');
    assert.equal(asJson.code, 1, 'a broken chain is a failure whatever the output format');
    assert.equal((await runSvcInProcess(['audit', '--json', '--data-dir', dataDir])).code, 0, 'without --verify nothing is checked');
  });

  test('commands on the same data directory at once wait for each other', async (t) => {
    const dataDir = tempDir(t);
    // Each waits for the one holding the directory; on a loaded machine longer than the 10 s SVC_OWNER_WAIT_MS default.
    const env = { SVC_OWNER_WAIT_MS: '120000' };
    const runs = await Promise.all(['a', 'b', 'c'].map((name) => runSvc(['keys', 'create', '--name', name, '--json', '--data-dir', dataDir], { env })));
    for (const run of runs) assert.equal(run.code, 0, run.stderr);
    const names = jsonOf((await runSvcInProcess(['keys', 'list', '--json', '--data-dir', dataDir])).stdout).keys.map((key: { name: string }) => key.name);
    assert.deepEqual(names.sort(), ['a', 'b', 'c']);
  });

  test('a live owner without a local socket makes the command fail with a clear message', async (t) => {
    const dataDir = tempDir(t);
    // This test process is alive and has no socket: it stands in for a server started without one.
    writeFileSync(join(dataDir, 'svc.lock'), JSON.stringify({ pid: process.pid, socketPath: null, startedAt: Date.now() }));
    // SVC_OWNER_WAIT_MS shortens the wait for the owner's socket (10 s by default), as the message is all this test reads.
    const result = await runSvc(['keys', 'list', '--data-dir', dataDir], { env: { SVC_OWNER_WAIT_MS: '200' } });
    assert.equal(result.code, 1);
    assert.match(result.stderr, new RegExp(`in use by process ${process.pid}, which has no local socket.*--url`));
    // A value that is not one is a configuration error before any wait, as svc serve's SVC_* are.
    for (const value of ['soon', '1e3', '600001']) {
      const bad = await runSvcInProcess(['keys', 'list', '--data-dir', dataDir], { env: { SVC_OWNER_WAIT_MS: value } });
      assert.equal(bad.code, 2, `${value}: ${bad.stderr}`);
      assert.match(bad.stderr, /^svc: invalid configuration: SVC_OWNER_WAIT_MS: must be an integer from 0 to 600000$/m);
    }
  });
});
