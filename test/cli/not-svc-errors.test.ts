/**
 * `--url` naming a server that is not svc and answers an error (another server's or a proxy's page) or a redirect: svc
 * answers every error with its JSON envelope and never redirects, so the message says the answer was not svc's. It
 * printed `svc: GET /api/v1/keys: HTTP 404` alone, as if svc had no keys route, and a 302 as `HTTP 302`.
 */
import assert from 'node:assert/strict';
import test, { before } from 'node:test';
import { foreignServer } from '../support/foreign-server.ts';
import { runSvcInProcess } from '../support/in-process-cli.ts';
import { ensureBundle, runSvc } from '../support/process.ts';

before(ensureBundle);

const TOKEN = 'svc_not-for-another-server-0001';

test("an error answer without svc's envelope says what it was and asks whether the server is svc", async (t) => {
  const html = await foreignServer(t, (res) => res.writeHead(404, { 'content-type': 'text/html' }).end('<!doctype html><h1>404 Not Found</h1>'));
  const empty = await foreignServer(t, (res) => res.writeHead(500).end());
  const json = await foreignServer(t, (res) => res.writeHead(404, { 'content-type': 'application/json' }).end('{"message":"Not Found"}'));
  const text = await foreignServer(t, (res) => res.writeHead(503, { 'content-type': 'text/plain' }).end('upstream connect error'));
  const page = await runSvc(['keys', 'list', '--url', html]);
  assert.equal(page.code, 1, page.stderr);
  assert.equal(page.stdout, '');
  assert.equal(page.stderr, "svc: GET /api/v1/keys: HTTP 404 with an HTML page, not svc's error: is it svc?\n");
  for (const [base, answer] of [
    [empty, 'HTTP 500 with an empty body'],
    [json, 'HTTP 404 with JSON'],
    [text, 'HTTP 503 with text'],
  ] as const) {
    const result = await runSvcInProcess(['users', 'list', '--url', base]);
    assert.equal(result.code, 1, result.stderr);
    assert.equal(result.stderr, `svc: GET /api/v1/users: ${answer}, not svc's error: is it svc?\n`);
  }
});

test('a redirect names its Location, escaped, and is not followed: the token never reaches the server it names', async (t) => {
  const elsewhere: Array<string | undefined> = [];
  const other = await foreignServer(t, (res, req) => {
    elsewhere.push(req.headers.authorization);
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"keys":[],"pagination":{"limit":50,"offset":0,"total":0,"hasMore":false}}');
  });
  // A C1 CSI (HTTP lets a header hold bytes 0x80-0xff) in the Location would clear the screen the error is printed on.
  const location = `${other}/login\u009b2J`;
  const base = await foreignServer(t, (res) => res.writeHead(302, { location, 'content-type': 'text/html' }).end('<a href="/login">Found</a>'));
  const result = await runSvc(['keys', 'list', '--url', base], { env: { SVC_API_KEY: TOKEN } });
  assert.equal(result.code, 1, result.stderr);
  assert.equal(result.stdout, '');
  assert.equal(result.stderr, `svc: GET /api/v1/keys: HTTP 302, a redirect to "${other}/login\\u009b2J" (not followed: svc never redirects): is it svc?\n`);
  assert.deepEqual(elsewhere, [], 'nothing went to the server the redirect named');
});

test("svc's own errors read as before", async (t) => {
  const svcLike = await foreignServer(t, (res) => res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"code":"not_found","message":"API key not found."}}'));
  const result = await runSvcInProcess(['keys', 'revoke', 'key_nope', '--yes', '--url', svcLike]);
  assert.equal(result.code, 1, result.stderr);
  assert.equal(result.stderr, 'svc: POST /api/v1/keys/key_nope/revoke: HTTP 404 not_found: API key not found.\n');
});
