import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MODEL_CATALOGUE } from '../../src/gateway/models.ts';
import { bearer, build, json } from '../support/build.ts';
import { validateAgainst } from '../support/openapi.ts';

test('GET /v1/models lists the deterministic catalogue in the chat-completions list shape', async (t) => {
  const { app } = await build(t);
  const first = await app.inject({ method: 'GET', url: '/v1/models' });
  assert.equal(first.statusCode, 200);
  const body = json(first);
  assert.equal(validateAgainst('ListModelsResponse', body), null);
  assert.equal(body.object, 'list');
  const ids = body.data.map((m: { id: string }) => m.id);
  for (const id of ['svc/chorus', 'gpt-4o', 'gpt-4o-mini', 'gpt-4.1', 'o3-mini', 'claude-sonnet-4-5', 'claude-3-5-haiku-latest',
    'text-embedding-3-small', 'text-embedding-3-large', 'text-embedding-ada-002']) {
    assert.ok(ids.includes(id), `catalogue lists ${id}`);
  }
  for (const model of body.data) {
    assert.deepEqual(Object.keys(model).sort(), ['created', 'id', 'object', 'owned_by']);
    assert.equal(model.object, 'model');
    assert.ok(Number.isInteger(model.created));
  }
  const second = await app.inject({ method: 'GET', url: '/v1/models' });
  assert.equal(second.body, first.body, 'the list is byte-for-byte stable');
  assert.equal(first.headers['x-svc-run-id'], undefined, 'listing models records no run');
});

test('GET /v1/models/{model} returns one model object, the encoded slash included', async (t) => {
  const { app } = await build(t);
  const chorus = await app.inject({ method: 'GET', url: '/v1/models/svc%2Fchorus' });
  assert.equal(chorus.statusCode, 200);
  assert.deepEqual(json(chorus), MODEL_CATALOGUE.find((m) => m.id === 'svc/chorus'));
  assert.equal(validateAgainst('Model', json(chorus)), null);
  const lower = await app.inject({ method: 'GET', url: '/v1/models/svc%2fchorus' });
  assert.equal(json(lower).id, 'svc/chorus');
  const plain = await app.inject({ method: 'GET', url: '/v1/models/text-embedding-3-large' });
  assert.equal(json(plain).id, 'text-embedding-3-large');
  assert.equal(validateAgainst('Model', json(plain)), null);
});

test('an unknown model is a 404 model_not_found in the chat-completions error shape', async (t) => {
  const { app } = await build(t);
  for (const url of ['/v1/models/gpt-99', '/v1/models/svc%2Fnothing', '/v1/models/svc/nothing']) {
    const response = await app.inject({ method: 'GET', url });
    assert.equal(response.statusCode, 404, url);
    const body = json(response);
    assert.deepEqual(Object.keys(body.error).sort(), ['code', 'message', 'param', 'type']);
    assert.equal(body.error.type, 'invalid_request_error');
    assert.equal(body.error.code, 'model_not_found');
    assert.equal(body.error.param, 'model');
    assert.match(body.error.message, /does not exist/);
  }
});

test('the models routes share the gateway auth: protected mode needs a key', async (t) => {
  const { app } = await build(t, { env: { SVC_API_KEY: 'svc_bootstrap_models_test_token' } });
  const anonymous = await app.inject({ method: 'GET', url: '/v1/models' });
  assert.equal(anonymous.statusCode, 401);
  assert.equal(json(anonymous).error.code, 'invalid_api_key');
  const keyed = await app.inject({ method: 'GET', url: '/v1/models/gpt-4o', headers: bearer('svc_bootstrap_models_test_token') });
  assert.equal(keyed.statusCode, 200);
});
