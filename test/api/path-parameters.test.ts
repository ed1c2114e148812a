/**
 * The path parameters of the management API (`/keys/:id`, `/runs/:id/events`, `/orgs/active/members/:userId`,
 * `/invites/:token`, ...) under one rule (src/http/path-parameters.ts, docs/api.md "Path parameters"), on every route
 * that has one, read from the router so that a route added later is held to it too. Sent over a raw socket: every
 * URL parser (app.inject's included) resolves a dot segment before the request goes out.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import { BOOT, buildWithAdmin } from '../support/accounts.ts';
import { exchange } from '../support/raw-http.ts';
import { managementRoutes } from '../support/routes.ts';

/** A body each write would take for a record that exists, so that what it answers is about the path alone. */
const BODIES: Record<string, unknown> = {
  'PATCH /api/v1/keys/:id': { mode: 'observe' },
  'PATCH /api/v1/users/:id': { name: 'Renamed' },
  'PATCH /api/v1/orgs/active/members/:userId': { role: 'member' },
  'POST /api/v1/runs/:id/feedback': { type: 'rating', rating: 5 },
  'POST /api/v1/runs/:id/feedback/metrics': { metrics: { exact: true }, optimize: 'max', source: 'test' },
};

test('every path parameter answers one input one way: a dot segment or an empty one is 400, an id of any length the router takes is looked up', async (t) => {
  const { app } = await buildWithAdmin(t);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as { port: number };
  const routes = managementRoutes(app).filter(([, path]) => /\/:\w+/.test(path));
  assert.ok(routes.length >= 20, `routes with a parameter: ${routes.length}`);

  for (const [method, route] of routes) {
    const label = `${method} ${route}`;
    const body = BODIES[label] === undefined ? '' : JSON.stringify(BODIES[label]);
    const send = async (value: string) => {
      const path = route.replace(/:\w+/, value);
      const framing = body ? `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` : '';
      const answer = await exchange(port, `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${BOOT}\r\nConnection: close\r\n${framing}\r\n${body}`);
      const error = (answer.body as { error?: { code: string; message: string } } | null)?.error;
      return { status: answer.status, code: error?.code ?? null, message: error?.message ?? '' };
    };

    // Every URL parser reads `/keys/../revoke` as `/revoke`: the router did not, and looked up a key `..` (404), the
    // `/v1/models/..` of the gateway was a 400 already; a `.` or `..` now is that 400 on every route.
    const last = /\/:\w+$/.test(route);
    // Where the parameter ends the path, with the trailing slash the router ignores too.
    for (const value of last ? ['.', '..', './', '../'] : ['.', '..']) {
      const answer = await send(value);
      assert.equal(answer.status, 400, `${label} ${value}`);
      assert.equal(answer.code, 'invalid_request', `${label} ${value}`);
      assert.match(answer.message, /dot segment/, `${label} ${value}`);
    }
    // An empty segment (`/keys//revoke`) names nothing: 400 everywhere (a token's route said `invalid_token`).
    if (!last) {
      const empty = await send('');
      assert.deepEqual([empty.status, empty.code], [400, 'invalid_request'], `${label} (empty)`);
    }

    // An unknown id is its route's not-found answer whatever its length up to the router's limit: keys, users and
    // members answered 400 past 100 characters, runs past 200, while a shorter unknown id was a 404.
    const unknown = await send('nope');
    for (const length of [150, 256]) {
      const long = await send('n'.repeat(length));
      assert.deepEqual([long.status, long.code], [unknown.status, unknown.code], `${label} (${length} characters)`);
    }
    if (/:(id|userId)\b/.test(route)) assert.deepEqual([unknown.status, unknown.code], [404, 'not_found'], label);
    // Past it, the router's 414 before anything is read.
    const tooLong = await send('n'.repeat(10_000));
    assert.deepEqual([tooLong.status, tooLong.code], [414, 'uri_too_long'], `${label} (10,000 characters)`);
  }
});
