/**
 * `--url` naming a server that is not svc but answers JSON (another service's API on that port, a proxy's status
 * page): every admin command against a node:http server answering each request 200 `{"status":"ok"}`.
 */
import assert from 'node:assert/strict';
import test, { before } from 'node:test';
import { foreignServer } from '../support/foreign-server.ts';
import { runSvcInProcess } from '../support/in-process-cli.ts';
import { ensureBundle, runSvc } from '../support/process.ts';

before(ensureBundle);

/** Each admin command with the call whose answer it reads first. */
const COMMANDS: ReadonlyArray<readonly [string[], string]> = [
  [['keys', 'list'], 'GET /api/v1/keys'],
  [['keys', 'create', '--name', 'ci'], 'POST /api/v1/keys'],
  [['keys', 'mode', 'key_1', 'observe'], 'PATCH /api/v1/keys/key_1'],
  [['keys', 'revoke', 'key_1', '--yes'], 'POST /api/v1/keys/key_1/revoke'],
  [['users', 'list'], 'GET /api/v1/users'],
  [['users', 'create', '--email', 'ada@example.com'], 'POST /api/v1/users'],
  [['users', 'delete', 'ada@example.com', '--yes'], 'GET /api/v1/users?email=ada%40example.com'],
  [['users', 'delete', 'usr_1', '--yes'], 'DELETE /api/v1/users/usr_1'],
  [['users', 'reset-password', 'usr_1'], 'POST /api/v1/users/usr_1/reset-password'],
  [['orgs', 'list'], 'GET /api/v1/orgs'],
  [['orgs', 'create', '--name', 'Acme', '--owner', 'ada@example.com'], 'POST /api/v1/orgs'],
  [['orgs', 'members'], 'GET /api/v1/orgs/active'],
  [['orgs', 'invite', '--email', 'bob@example.com'], 'POST /api/v1/orgs/active/invites'],
  [['orgs', 'invites'], 'GET /api/v1/orgs/active/invites'],
  [['orgs', 'revoke-invite', 'inv_1'], 'POST /api/v1/orgs/active/invites/inv_1/revoke'],
  [['orgs', 'set-role', 'usr_1', 'admin'], 'PATCH /api/v1/orgs/active/members/usr_1'],
  [['orgs', 'remove-member', 'usr_1', '--yes'], 'DELETE /api/v1/orgs/active/members/usr_1'],
  [['orgs', 'delete', '--org', 'org_1', '--yes'], 'GET /api/v1/orgs/active'],
  [['settings', 'get'], 'GET /api/v1/settings'],
  [['settings', 'get', 'retention_days'], 'GET /api/v1/settings'],
  [['settings', 'set', 'retention_days', '30'], 'PUT /api/v1/settings'],
  [['audit'], 'GET /api/v1/audit'],
  [['audit', '--verify'], 'GET /api/v1/audit?verify=true'],
  [['cache', 'stats'], 'GET /api/v1/cache/stats'],
  [['cache', 'invalidate', '--all', '--yes'], 'POST /api/v1/cache/invalidate'],
];

const escaped = (text: string) => text.replace(/[.?/]/g, '\\$&');

test('a 2xx JSON answer that is not svc\'s is an error naming the call and asking whether it is svc, for every admin command', async (t) => {
  // Each read a field of it as svc's: a TypeError's text (svc: Cannot read properties of undefined (reading 'length'),
  // exit 1), or, where nothing was read, success: `svc users delete usr_1 --yes` printed `deleted user usr_1` and
  // `svc cache invalidate --all --yes` `invalidated undefined entries`, both exit 0.
  const base = await foreignServer(t, (res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"status":"ok"}');
  });
  for (const [args, call] of COMMANDS) {
    const result = await runSvcInProcess([...args, '--url', base]);
    const line = `svc ${args.join(' ')}`;
    assert.equal(result.code, 1, `${line}: ${result.stderr}`);
    assert.equal(result.stdout, '', line);
    assert.match(result.stderr, new RegExp(`^svc: the server answered ${escaped(call)} with HTTP 200 but not .+: is it svc\\?$`, 'm'), line);
    assert.doesNotMatch(result.stderr, /Cannot read|undefined|TypeError/, line);
  }
  // --json prints the answer as it came only once it is svc's: stdout stays empty, the error on stderr.
  const json = await runSvc(['keys', 'list', '--json', '--url', base]);
  assert.equal(json.code, 1, json.stderr);
  assert.equal(json.stdout, '');
  assert.equal(json.stderr, 'svc: the server answered GET /api/v1/keys with HTTP 200 but not a page of API keys: is it svc?\n');
});

test('a list whose rows are not objects is not svc\'s answer either', async (t) => {
  const base = await foreignServer(t, (res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ keys: [null], pagination: { limit: 50, offset: 0, total: 1, hasMore: false } }));
  });
  const result = await runSvcInProcess(['keys', 'list', '--url', base]);
  assert.equal(result.code, 1, result.stderr);
  assert.equal(result.stderr, 'svc: the server answered GET /api/v1/keys with HTTP 200 but not a page of API keys: is it svc?\n');
});
