/**
 * The admin CLI against a running `svc serve`: commands go through the data directory's local socket, a second
 * server is refused, a lock left by a killed server is taken over, and `--url` speaks plain HTTP.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import test, { before, describe } from 'node:test';
import { runSvcInProcess } from '../support/in-process-cli.ts';
import { loadConfig } from '../../src/config.ts';
import { ensureBundle, listenOnce, runSvc, startServe, suiteCleanups, tempDir, type Cleanups, type ServeProcess } from '../support/process.ts';

before(ensureBundle);

const jsonOf = (text: string) => JSON.parse(text);

/**
 * `svc serve` on the first of `ports` it can listen on. A port free when probed may be taken by another process before
 * svc listens on it (two suites side by side): svc exits with EADDRINUSE, and the next port is tried.
 */
async function serveOnFirstFree(t: Cleanups, ports: readonly number[]): Promise<ServeProcess> {
  for (const port of ports) {
    if (!(await listenOnce(port).then(() => true, () => false))) continue;
    try {
      return await startServe(t, tempDir(t), { SVC_PORT: String(port) });
    } catch (error) {
      if (!/EADDRINUSE/.test(String(error))) throw error;
    }
  }
  throw new Error(`none of the ports ${ports.join(', ')} is free`);
}

// The file's tests (and the socket flow's stages, one after another, as a group) run at once: each is a run of child
// processes, seconds each on a loaded machine, and the test timeout applies to the whole file under node --test.
describe('svc serve and the admin CLI beside it', { concurrency: true }, () => {
  // The flow's stages are tests of their own, on one data directory and one server, each in order after the one
  // before. Commands sent to the server run in-process (runSvcInProcess: it finds the server's lock as bin/svc does and
  // goes through its socket too), but the first, a process of its own talking to the server; bin/svc also starts the
  // second server, and takes the data directory in-process after the stop, keeping the app and its SQLite out of this
  // process.
  describe('with a server running, commands go through its local socket', { concurrency: 1 }, () => {
    const cleanups = suiteCleanups();
    const dataDir = tempDir(cleanups);
    const args = ['--data-dir', dataDir];
    let server: ServeProcess;
    let key: { id: string };
    let token: string;

    test('a key created through the socket works against the TCP port at once', async () => {
      server = await startServe(cleanups, dataDir);
      const created = await runSvc(['keys', 'create', '--name', 'via-socket', '--json', ...args]);
      assert.equal(created.code, 0, created.stderr);
      ({ key, token } = jsonOf(created.stdout));
      // The write went through the running process.
      const models = await fetch(`${server.address}/v1/models`, { headers: { authorization: `Bearer ${token}` } });
      assert.equal(models.status, 200);
    });

    test('keys list, mode and revoke (refused without --yes)', async () => {
      // Reads that do not depend on each other: at once.
      const [table, listed, refused] = await Promise.all([
        runSvcInProcess(['keys', 'list', ...args]),
        runSvcInProcess(['keys', 'list', '--json', ...args]),
        runSvcInProcess(['keys', 'revoke', key.id, ...args]),
      ]);
      assert.match(table.stdout, new RegExp(`${key.id}\\s+via-socket\\s+optimize`));
      assert.equal(jsonOf(listed.stdout).keys[0].id, key.id);
      assert.equal(refused.code, 2, 'no terminal and no --yes');
      assert.equal(jsonOf((await runSvcInProcess(['keys', 'mode', key.id, 'observe', '--json', ...args])).stdout).key.mode, 'observe');
      assert.equal(jsonOf((await runSvcInProcess(['keys', 'revoke', key.id, '--yes', '--json', ...args])).stdout).key.status, 'revoked');
      assert.equal((await fetch(`${server.address}/v1/models`, { headers: { authorization: `Bearer ${token}` } })).status, 401);
    });

    test('a secret setting from stdin, shown as [set]', async () => {
      const secret = await runSvcInProcess(['settings', 'set', 'webhook_secret', '--value-stdin', ...args], { input: 's3cret-value' });
      assert.equal(secret.code, 0, secret.stderr);
      assert.equal(jsonOf((await runSvcInProcess(['settings', 'get', 'webhook_secret', '--json', ...args])).stdout).settings.webhook_secret, '[set]');
    });

    test('the audit log holds each change by the local actor, its chain intact; a second server is refused', async () => {
      // Neither writes: at once.
      const [audited, second] = await Promise.all([runSvcInProcess(['audit', '--json', '--verify', ...args]), runSvc(['serve', '--port', '0', ...args])]);
      const audit = jsonOf(audited.stdout);
      assert.deepEqual(
        audit.events.slice(0, 4).map((event: { action: string }) => event.action),
        ['settings.update', 'key.revoke', 'key.mode_change', 'key.create'],
      );
      assert.ok(audit.events.every((event: { actor: { kind: string } }) => event.actor.kind === 'local'));
      assert.equal(audit.integrity.ok, true);
      assert.equal(second.code, 1);
      assert.match(second.stderr, /in use by process/);
    });

    test('after a graceful stop the commands run in-process again', async () => {
      server.child.kill('SIGTERM');
      assert.equal(await server.exited, 0);
      const after = jsonOf((await runSvc(['keys', 'list', '--json', ...args])).stdout);
      assert.equal(after.keys.length, 1, 'in-process again after a graceful stop');
    });
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

  test('a lock left by a killed server whose pid the next server gets again (a container restart) is taken over', async (t) => {
    const dataDir = tempDir(t);
    assert.equal((await runSvc(['keys', 'create', '--name', 'before-restart', '--data-dir', dataDir])).code, 0);
    // What a container's entrypoint, started again after a kill -9, finds: the lock of the killed process, its own pid.
    const lock = `{"pid":%s,"socketPath":"${dataDir}/svc.sock","startedAt":1}`;
    const restarted = await startServe(t, dataDir, {}, `printf '${lock}' $$ > '${dataDir}/svc.lock'`);
    const listed = await runSvc(['keys', 'list', '--json', '--data-dir', dataDir]);
    assert.equal(listed.code, 0, listed.stderr);
    assert.deepEqual(jsonOf(listed.stdout).keys.map((key: { name: string }) => key.name), ['before-restart']);
    restarted.child.kill('SIGTERM');
    assert.equal(await restarted.exited, 0);
  });

  test('--url and SVC_BASE_URL talk HTTP with --api-key or SVC_API_KEY', async (t) => {
    const dataDir = tempDir(t);
    const bootstrap = 'bootstrap-token-for-cli-tests-0001';
    const server = await startServe(t, dataDir, { SVC_API_KEY: bootstrap });
    // None writes: at once, before the key the last one creates.
    const [denied, allowed, unreachable] = await Promise.all([
      runSvc(['keys', 'list', '--url', server.address]),
      runSvc(['keys', 'list', '--json', '--url', server.address, '--api-key', bootstrap]),
      runSvc(['keys', 'list', '--url', 'http://127.0.0.1:1']),
    ]);
    assert.equal(denied.code, 1);
    assert.match(denied.stderr, /^svc: GET \/api\/v1\/keys\S*: HTTP 401 \w+: /m);
    assert.equal(allowed.code, 0, allowed.stderr);
    assert.deepEqual(jsonOf(allowed.stdout).keys, []);
    assert.equal(unreachable.code, 1);
    assert.match(unreachable.stderr, /cannot reach svc/);
    const fromEnv = await runSvc(['keys', 'create', '--name', 'env', '--json'], { env: { SVC_BASE_URL: server.address, SVC_API_KEY: bootstrap } });
    assert.equal(fromEnv.code, 0, fromEnv.stderr);
    assert.equal(jsonOf(fromEnv.stdout).key.name, 'env');
  });

  test('a base URL with spaces after it (an env file\'s `SVC_BASE_URL=http://... `) is read as the URL parser reads it', async (t) => {
    // The check took it, as URL parsing drops spaces around a URL, but the paths were put behind the spaces: every
    // command failed with a bare "Invalid URL", or addressed /%20/api/v1/keys.
    const server = await startServe(t, tempDir(t));
    const results = await Promise.all([
      runSvc(['keys', 'list', '--json'], { env: { SVC_BASE_URL: `${server.address} ` } }),
      runSvc(['keys', 'list', '--json', '--url', `${server.address}/ `]),
    ]);
    for (const result of results) {
      assert.equal(result.code, 0, result.stderr);
      assert.deepEqual(jsonOf(result.stdout).keys, []);
    }
    // Spaces alone are no URL: unset, as an empty SVC_BASE_URL is and as the client library reads it (it was a usage
    // error, "SVC_BASE_URL must be an http(s) URL").
    const blank = await runSvc(['keys', 'list', '--json', '--data-dir', tempDir(t)], { env: { SVC_BASE_URL: '   ' } });
    assert.equal(blank.code, 0, blank.stderr);
    assert.deepEqual(jsonOf(blank.stdout).keys, []);
  });

  test('a server on a port browsers block (6666, 10080: the Fetch standard\'s "bad ports") is reached by --url as on any other', async (t) => {
    // fetch refused these ports with "bad port" before connecting: the commands could not reach a server curl reached.
    const server = await serveOnFirstFree(t, [6666, 6667, 6668, 6669, 6665, 10080, 6000, 6697]);
    const created = await runSvc(['keys', 'create', '--name', 'on-a-bad-port', '--json', '--url', server.address]);
    assert.equal(created.code, 0, created.stderr);
    const listed = await runSvc(['keys', 'list', '--json', '--url', server.address]);
    assert.equal(listed.code, 0, listed.stderr);
    assert.deepEqual(jsonOf(listed.stdout).keys.map((key: { name: string }) => key.name), ['on-a-bad-port']);
  });

  test('an unknown --log-level is a usage error before the data directory is touched', async (t) => {
    const dataDir = join(tempDir(t), 'not-created');
    const result = await runSvc(['serve', '--port', '0', '--data-dir', dataDir, '--log-level', 'loud']);
    assert.equal(result.code, 2, result.stderr);
    assert.match(result.stderr, /--log-level <level>' argument 'loud' is invalid\. Allowed choices are fatal, error, warn, info, debug, trace, silent/);
    assert.equal(existsSync(dataDir), false);
  });

  test('a bad SVC_TRUSTED_PROXY_CIDRS entry is a configuration error naming the variable, before the data directory is touched', async (t) => {
    const dataDir = join(tempDir(t), 'not-created');
    const entries = ['1.2.3.4/99', '10.0.0', '::1/255.0.0.0'];
    // Each is refused before the data directory is opened: run at once.
    const results = await Promise.all(
      entries.map((entry) =>
        runSvc(['serve', '--port', '0', '--data-dir', dataDir], { env: { SVC_TRUST_PROXY_HEADERS: 'true', SVC_TRUSTED_PROXY_CIDRS: `127.0.0.1,${entry}` } }),
      ),
    );
    results.forEach((result, i) => {
      assert.equal(result.code, 2, result.stderr);
      assert.equal(result.stderr, `svc: invalid configuration: SVC_TRUSTED_PROXY_CIDRS: "${entries[i]}" is not an IP address or CIDR range (such as 10.0.0.0/8)\n`);
    });
    assert.equal(existsSync(dataDir), false);
  });

  test('an SVC_TRUSTED_PROXY_CIDRS range holding no network bit (/0, a netmask whose ones are not first) is a configuration error, not proxy-addr\'s after the data directory was made', async (t) => {
    const dataDir = join(tempDir(t), 'not-created');
    const entries = ['0.0.0.0/0', '::/0', '10.0.0.0/0.0.0.0', '10.0.0.0/255.0.255.0'];
    const results = await Promise.all(
      entries.map((entry) =>
        runSvc(['serve', '--port', '0', '--data-dir', dataDir], { env: { SVC_TRUST_PROXY_HEADERS: 'true', SVC_TRUSTED_PROXY_CIDRS: entry } }),
      ),
    );
    results.forEach((result, i) => {
      assert.equal(result.code, 2, result.stderr);
      assert.match(result.stderr, new RegExp(`^svc: invalid configuration: SVC_TRUSTED_PROXY_CIDRS: "${entries[i]!.replace(/\./g, '\\.')}" trusts no proxy in particular`));
    });
    assert.equal(existsSync(dataDir), false);
    // A netmask with its ones first is a range proxy-addr takes.
    assert.deepEqual(loadConfig({ SVC_TRUST_PROXY_HEADERS: 'true', SVC_TRUSTED_PROXY_CIDRS: '10.0.0.0/255.0.0.0,192.168.0.0/16' }).proxy.trustedCidrs, ['10.0.0.0/255.0.0.0', '192.168.0.0/16']);
  });

  test('a bootstrap admin password outside the rules is a configuration error naming the variable, before the data directory is touched', async (t) => {
    const dataDir = join(tempDir(t), 'not-created');
    const passwords = ['short', 'x'.repeat(257)];
    // Each is refused before the data directory is opened: run at once.
    const results = await Promise.all(
      passwords.map((password) => runSvc(['serve', '--port', '0', '--data-dir', dataDir], { env: { SVC_ADMIN_EMAIL: 'boss@example.test', SVC_ADMIN_PASSWORD: password } })),
    );
    for (const result of results) {
      assert.equal(result.code, 2, result.stderr);
      assert.equal(result.stderr, 'svc: invalid configuration: SVC_ADMIN_PASSWORD: must be 8 to 256 characters long\n');
    }
    assert.equal(existsSync(dataDir), false);
  });

  test('SVC_EMAIL_API_URL is checked whenever it is set, with EMAILPROV_API_KEY or without it, as every base address is', async (t) => {
    // Without the key e-mails go to the console and the address is not used, but one that is no URL started svc without
    // a word (where CHATCOMP_FALLBACK_BASE_URL without its key stops it), to stop it only once the key was added.
    const dataDir = join(tempDir(t), 'not-created');
    const results = await Promise.all(
      ([{}, { EMAILPROV_API_KEY: 'emailprov-test-key' }] as Array<Record<string, string>>).map((key) =>
        runSvc(['keys', 'list', '--data-dir', dataDir], { env: { SVC_EMAIL_API_URL: 'mail.example.com/send', ...key } }),
      ),
    );
    for (const result of results) {
      assert.equal(result.code, 2, result.stderr);
      assert.equal(result.stderr, 'svc: invalid configuration: SVC_EMAIL_API_URL: must be an absolute http(s) URL\n');
    }
    assert.equal(existsSync(dataDir), false);
  });

  test('an integer variable takes decimal digits only, in svc serve and in the commands that read it', async (t) => {
    const dataDir = join(tempDir(t), 'not-created');
    const bad = [['SVC_PORT', '0x1F90'], ['SVC_HEADERS_TIMEOUT_MS', '1e4'], ['SVC_SHUTDOWN_TIMEOUT_MS', '5000.0'], ['SVC_RATE_LIMIT_API_PER_MINUTE', '-0']] as const;
    // Each is refused before the data directory is opened: run at once.
    const results = await Promise.all(bad.map(([name, value]) => runSvc(['keys', 'list', '--data-dir', dataDir], { env: { [name]: value } })));
    results.forEach((result, i) => {
      const [name, value] = bad[i]!;
      assert.equal(result.code, 2, `${name}=${value}: ${result.stderr}`);
      assert.match(result.stderr, new RegExp(`^svc: invalid configuration: ${name}: must be an integer from`));
    });
    assert.equal(existsSync(dataDir), false);
    assert.equal((await runSvc(['keys', 'list', '--data-dir', dataDir], { env: { SVC_PORT: ' 8080 ' } })).code, 0, 'spaces around are trimmed');
  });

  test('an empty SVC_LOG_LEVEL counts as unset, as every variable set to nothing does', async (t) => {
    // A compose file's `SVC_LOG_LEVEL=` (or `SVC_LOG_LEVEL= `): the default level, not a refused start.
    const [empty, blank] = await Promise.all([startServe(t, tempDir(t), { SVC_LOG_LEVEL: '' }), startServe(t, tempDir(t), { SVC_LOG_LEVEL: ' ' })]);
    assert.match(empty.output(), /svc listening on/);
    assert.match(blank.output(), /svc listening on/);
  });

  test('a flag takes true/1/yes/on or false/0/no/off: any other value stops svc serve naming the variable', async (t) => {
    // `SVC_REQUIRE_LOGIN=ture` started svc in open mode, every caller an admin, without a word.
    const bad = [['SVC_REQUIRE_LOGIN', 'ture'], ['SVC_ALLOW_PUBLIC_SIGNUP', 'enabled'], ['SVC_TRUST_PROXY_HEADERS', 'y'], ['SVC_ALLOW_OPEN_GATEWAY', '2']] as const;
    const dataDirs = bad.map(() => join(tempDir(t), 'not-created'));
    // Each is refused before the data directory is opened: run at once. (A server that starts anyway is killed after the test.)
    await Promise.all(
      bad.map(([name, value], i) =>
        assert.rejects(
          startServe(t, dataDirs[i]!, { [name]: value }),
          new RegExp(`^Error: svc serve exited with 2: svc: invalid configuration: ${name}: must be true, 1, yes or on, or false, 0, no or off\n$`),
          `${name}=${value}`,
        ),
      ),
    );
    for (const dataDir of dataDirs) assert.equal(existsSync(dataDir), false);
    // The four flags share one parser (src/config.ts): a command reading them all at once is refused if any value is,
    // naming it, so each run takes several of the words (each run an opened data directory, ~0.5 s of CPU).
    const good: Array<Record<string, string>> = [
      { SVC_REQUIRE_LOGIN: 'false', SVC_ALLOW_PUBLIC_SIGNUP: 'OFF', SVC_TRUST_PROXY_HEADERS: ' no ', SVC_ALLOW_OPEN_GATEWAY: '0' },
      { SVC_REQUIRE_LOGIN: 'Yes', SVC_ALLOW_PUBLIC_SIGNUP: 'on', SVC_ALLOW_OPEN_GATEWAY: '' },
    ];
    const started = await Promise.all(good.map((env) => runSvc(['keys', 'list', '--data-dir', tempDir(t)], { env })));
    started.forEach((result, i) => assert.equal(result.code, 0, `${JSON.stringify(good[i])}: ${result.stderr}`));
  });

  test('a data directory that cannot be created where its parent exists (in /proc) stops svc serve naming it', { skip: !existsSync('/proc/self') }, async (t) => {
    // mkdir answers ENOENT in /proc though /proc exists: node's recursive mkdirSync retried that forever, at full CPU.
    await assert.rejects(
      startServe(t, '/proc/svc-test-data-dir'),
      /^Error: svc serve exited with 1: svc: cannot create the data directory \/proc\/svc-test-data-dir: its file system does not take new directories there\n$/,
    );
  });

  test('on a wildcard host the address printed is one a browser or client can open (a loopback), for IPv6 as for IPv4', async (t) => {
    const v4 = await startServe(t, tempDir(t), { SVC_HOST: '0.0.0.0' });
    assert.equal(new URL(v4.address).hostname, '127.0.0.1');
    // A machine may run without IPv6 (a container with it disabled): there is no `::` to bind.
    if (!(await ipv6LoopbackWorks())) return t.diagnostic('no IPv6 loopback here: the :: half is skipped');
    const v6 = await startServe(t, tempDir(t), { SVC_HOST: '::' });
    assert.equal(new URL(v6.address).hostname, '[::1]');
    assert.equal((await fetch(`${v6.address}/health`)).status, 200);
  });

  test('a host that cannot stand in a URL stops svc serve with a configuration error naming it', async (t) => {
    const dataDir = tempDir(t);
    const cases = [
      [[], { SVC_HOST: '0.0.0.0:8787' }, 'SVC_HOST'],
      [['--host', '999.1.1.1'], {}, '--host'],
    ] as const;
    // Each is refused before the data directory is opened: run at once.
    const results = await Promise.all(cases.map(([extra, env]) => runSvc(['serve', '--port', '0', '--data-dir', dataDir, ...extra], { env })));
    results.forEach((result, i) => {
      assert.equal(result.code, 2, result.stderr);
      assert.match(result.stderr, new RegExp(`^svc: invalid configuration: ${cases[i]![2]}: must be a host name or an IP address`, 'm'));
    });
  });
});

/** Whether this machine can listen on IPv6's loopback. */
function ipv6LoopbackWorks(): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen(0, '::1', () => probe.close(() => resolve(true)));
  });
}
