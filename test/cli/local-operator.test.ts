/**
 * The in-process local-operator marker (src/http/local-socket.ts) the CLI uses when no server owns the data
 * directory: honoured on an injected request with this process's secret, refused everywhere else.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import { LOCAL_OPERATOR_HEADER, LOCAL_OPERATOR_SECRET } from '../../src/http/local-socket.ts';
import { build, json } from '../support/build.ts';

const PROTECTED = { SVC_API_KEY: 'bootstrap-token-for-local-operator-01' };

test('an injected request with the process secret acts as the local operator', async (t) => {
  const { app } = await build(t, { env: PROTECTED });
  const created = await app.inject({
    method: 'POST',
    url: '/api/v1/keys',
    headers: { [LOCAL_OPERATOR_HEADER]: LOCAL_OPERATOR_SECRET },
    payload: { name: 'from-cli' },
  });
  assert.equal(created.statusCode, 201, created.body);
  const audit = await app.inject({ url: '/api/v1/audit', headers: { [LOCAL_OPERATOR_HEADER]: LOCAL_OPERATOR_SECRET } });
  assert.equal(json(audit).events[0].actor.kind, 'local');
});

test('an injected request without the marker, or with a wrong secret, is not the operator', async (t) => {
  const { app } = await build(t, { env: PROTECTED });
  assert.equal((await app.inject({ url: '/api/v1/keys' })).statusCode, 401);
  const forged = await app.inject({ url: '/api/v1/keys', headers: { [LOCAL_OPERATOR_HEADER]: 'guessed-secret' } });
  assert.equal(forged.statusCode, 401);
});

test('the marker is ignored on a real TCP connection even with the right secret', async (t) => {
  const { app } = await build(t, { env: PROTECTED });
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  const response = await fetch(`${address}/api/v1/keys`, { headers: { [LOCAL_OPERATOR_HEADER]: LOCAL_OPERATOR_SECRET } });
  assert.equal(response.status, 401);
});
