/**
 * A command over `--url` whose token svc refuses: svc's 401 says "Missing or invalid bearer token." whatever was wrong,
 * and the command printed it alone, with no word of --api-key or SVC_API_KEY nor whether it had sent a token. Against
 * a real `svc serve` with a bootstrap token.
 */
import assert from 'node:assert/strict';
import test, { before } from 'node:test';
import { foreignServer } from '../support/foreign-server.ts';
import { runSvcInProcess } from '../support/in-process-cli.ts';
import { ensureBundle, runSvc, startServe, tempDir } from '../support/process.ts';
import { skipWithoutTmux, terminal, until } from '../support/tmux.ts';

before(ensureBundle);

const BOOTSTRAP = 'bootstrap-token-for-token-hints-0001';
const WRONG = 'svc_wrong-token-that-must-not-be-printed';
const REFUSED = "svc: GET /api/v1/keys: HTTP 401 unauthorized: Missing or invalid bearer token.";
const NONE_SENT = "(no token was sent: give --api-key or SVC_API_KEY an admin API key or the server's bootstrap token)";
const refusedFrom = (source: string) => `(svc refused the token of ${source}: it must be an admin API key this server made and has not revoked, or its bootstrap token)`;

test("svc's 401 says which token the command sent, or that it sent none, never the token", async (t) => {
  const server = await startServe(t, tempDir(t), { SVC_API_KEY: BOOTSTRAP });
  const url = ['keys', 'list', '--url', server.address];
  const none = await runSvcInProcess(url, { env: { SVC_API_KEY: '' } });
  assert.equal(none.code, 1, none.stderr);
  assert.equal(none.stderr, `${REFUSED} ${NONE_SENT}\n`);
  const flag = await runSvcInProcess([...url, '--api-key', WRONG], { env: { SVC_API_KEY: '' } });
  assert.equal(flag.code, 1, flag.stderr);
  assert.equal(flag.stderr, `${REFUSED} ${refusedFrom('--api-key')}\n`);
  // bin/svc too: the hint's module is loaded only on a failure.
  const env = await runSvc(url, { env: { SVC_API_KEY: WRONG } });
  assert.equal(env.code, 1, env.stderr);
  assert.equal(env.stderr, `${REFUSED} ${refusedFrom('SVC_API_KEY')}\n`);
  for (const result of [flag, env]) assert.ok(!result.stderr.includes(WRONG.slice(4)), 'the token is never printed');
  // The right token still works.
  const allowed = await runSvcInProcess([...url, '--json'], { env: { SVC_API_KEY: BOOTSTRAP } });
  assert.equal(allowed.code, 0, allowed.stderr);
});

test("the runs TUI's error line says which token svc refused, or that none was sent, never the token", { skip: skipWithoutTmux }, async (t) => {
  const server = await startServe(t, tempDir(t), { SVC_API_KEY: BOOTSTRAP });
  for (const [env, hint] of [
    [{ SVC_API_KEY: WRONG }, refusedFrom('SVC_API_KEY')],
    [{ SVC_API_KEY: null }, NONE_SENT],
  ] as const) {
    const term = terminal(t, { columns: 200, rows: 20 });
    term.open(['runs', '--url', server.address], { env });
    // The error line wraps on the screen: read as one text.
    const shown = () => term.screen().replace(/\s*\n\s*/g, ' ');
    const screen = await until(shown, (text) => text.includes('HTTP 401'), 'the refused list', term.screen);
    assert.ok(screen.includes(`error: GET /api/v1/runs?limit=50&offset=0: HTTP 401 unauthorized: Missing or invalid bearer token. ${hint}`), screen);
    assert.ok(!screen.includes(WRONG.slice(4)), 'the token is never shown');
    term.keys('q');
    await until(term.alive, (alive) => !alive, 'svc runs to quit', term.screen);
  }
});

test("another server's 401 is not svc's verdict on the token: no hint", async (t) => {
  const base = await foreignServer(t, (res) => res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":{"code":"invalid_token","message":"Bad token."}}'));
  const result = await runSvcInProcess(['keys', 'list', '--url', base, '--api-key', WRONG]);
  assert.equal(result.code, 1, result.stderr);
  assert.equal(result.stderr, 'svc: GET /api/v1/keys: HTTP 401 invalid_token: Bad token.\n');
});
