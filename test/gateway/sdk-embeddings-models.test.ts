/**
 * The official `openai` client against a listening svc: embeddings (the client's default base64 path, which it
 * decodes, and explicit float) and models list/retrieve, including an id with a slash and a missing model.
 */
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { test, type TestContext } from 'node:test';
import OpenAI from 'openai';
import { build } from '../support/build.ts';
import { exchange } from '../support/raw-http.ts';

async function client(t: TestContext): Promise<OpenAI> {
  const { app } = await build(t, { env: { SVC_API_KEY: 'svc_sdk_test_bootstrap_token' } });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as AddressInfo;
  return new OpenAI({ apiKey: 'svc_sdk_test_bootstrap_token', baseURL: `http://127.0.0.1:${port}/v1`, maxRetries: 0 });
}

test('the SDK decodes base64 embeddings to the same vectors as float', async (t) => {
  const openai = await client(t);
  const input = ['first input', '', 'third input'];
  // No encoding_format: the SDK asks for base64 and decodes it itself.
  const decoded = await openai.embeddings.create({ model: 'text-embedding-3-small', input });
  const float = await openai.embeddings.create({ model: 'text-embedding-3-small', input, encoding_format: 'float' });
  assert.equal(decoded.object, 'list');
  assert.equal(decoded.data.length, 3);
  for (let i = 0; i < 3; i += 1) {
    assert.equal(decoded.data[i]!.index, i);
    assert.ok(Array.isArray(decoded.data[i]!.embedding));
    assert.equal(decoded.data[i]!.embedding.length, 1536);
    assert.deepEqual(decoded.data[i]!.embedding, float.data[i]!.embedding);
  }
  assert.deepEqual(decoded.usage, float.usage);
  const raw = await openai.embeddings.create({ model: 'text-embedding-3-large', input: 'x', encoding_format: 'base64', dimensions: 32 });
  assert.equal(typeof raw.data[0]!.embedding, 'string');
  assert.equal(Buffer.from(raw.data[0]!.embedding as unknown as string, 'base64').length, 32 * 4);
});

test('the SDK lists and retrieves models, svc/chorus included, and sees model_not_found', async (t) => {
  const openai = await client(t);
  const ids: string[] = [];
  for await (const model of openai.models.list()) ids.push(model.id);
  assert.ok(ids.includes('svc/chorus'));
  assert.ok(ids.includes('text-embedding-ada-002'));
  const chorus = await openai.models.retrieve('svc/chorus');
  assert.equal(chorus.id, 'svc/chorus');
  assert.equal(chorus.object, 'model');
  const gpt = await openai.models.retrieve('gpt-4o-mini');
  assert.equal(gpt.id, 'gpt-4o-mini');
  await assert.rejects(openai.models.retrieve('no-such-model'), (error: unknown) => {
    assert.ok(error instanceof OpenAI.NotFoundError);
    assert.equal(error.status, 404);
    assert.equal(error.code, 'model_not_found');
    assert.equal(error.param, 'model');
    return true;
  });
});

test('the SDK retrieving an unknown id of any length a request may name gets model_not_found, ids with :, %, / and unicode included', async (t) => {
  const openai = await client(t);
  // A fine-tuned id, a literal percent sign, an encoded-looking id, unicode, and ids past fastify's default 100
  // characters (a Bedrock-style ARN, 256 characters: what the gateway's model field allows).
  const arn = 'arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-3-5-sonnet-20241022-v2:0';
  for (const id of ['ft:gpt-4o-mini-2024-07-18:acme:support:9xKk2jPq', '50%', 'svc%2Fchorus', 'modèle-日本', arn, 'm'.repeat(256), '日'.repeat(256)]) {
    await assert.rejects(openai.models.retrieve(id), (error: unknown) => {
      assert.ok(error instanceof OpenAI.NotFoundError, `${id.length}: ${String(error)}`);
      assert.equal(error.code, 'model_not_found');
      assert.equal(error.param, 'model');
      assert.ok(error.message.includes(id));
      return true;
    });
  }
});

test('SDK validation errors on embeddings arrive as BadRequestError with the param', async (t) => {
  const openai = await client(t);
  await assert.rejects(
    openai.embeddings.create({ model: 'text-embedding-3-small', input: Array.from({ length: 2049 }, () => 'x') }),
    (error: unknown) => {
      assert.ok(error instanceof OpenAI.BadRequestError);
      assert.equal(error.param, 'input');
      return true;
    },
  );
});

test("a raw dot segment in /v1/models/{model} is a 400 naming it, never the id of a model the URL does not name; the client's encoded forms are ids", async (t) => {
  const { app } = await build(t, { env: { SVC_API_KEY: 'svc_sdk_test_bootstrap_token' } });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as AddressInfo;
  const get = (path: string) =>
    exchange(port, `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer svc_sdk_test_bootstrap_token\r\nConnection: close\r\n\r\n`);
  // Every URL parser (the clients', curl's, app.inject's) reads these as /v1/models/gpt-4o, /v1/models/x and the
  // list; the router does not resolve dot segments, and answered './gpt-4o', './x', 'x/..' and '.' as model ids.
  for (const path of ['/v1/models/./gpt-4o', '/v1/models/./x', '/v1/models/x/..', '/v1/models/svc/.', '/v1/models/.', '/v1/models/..', '/v1/models/./']) {
    const answer = await get(path);
    assert.equal(answer.status, 400, path);
    const error = (answer.body as { error: Record<string, unknown> }).error;
    assert.deepEqual(Object.keys(error).sort(), ['code', 'message', 'param', 'type'], path);
    assert.equal(error.type, 'invalid_request_error', path);
    assert.equal(error.code, 'invalid_request', path);
    assert.equal(error.param, 'model', path);
    assert.match(String(error.message), /dot segment/, path);
  }
  // What the official client sends for ids holding dots and slashes: one encoded segment, an id like any other.
  const openai = new OpenAI({ apiKey: 'svc_sdk_test_bootstrap_token', baseURL: `http://127.0.0.1:${port}/v1`, maxRetries: 0 });
  for (const id of ['./x', '../x', 'x/..', '..%2F', '%2e%2e', '.hidden', 'a..b', 'org/model']) {
    await assert.rejects(openai.models.retrieve(id), (error: unknown) => {
      assert.ok(error instanceof OpenAI.NotFoundError, `${id}: ${String(error)}`);
      assert.equal(error.code, 'model_not_found');
      assert.ok(error.message.includes(`'${id}'`), error.message);
      return true;
    });
  }
  // Names holding dots that are not dot segments stay ids, raw as encoded.
  for (const path of ['/v1/models/.hidden', '/v1/models/x/...', '/v1/models/..%2Fhealth']) {
    const answer = await get(path);
    assert.equal(answer.status, 404, path);
    assert.equal((answer.body as { error: { code: string } }).error.code, 'model_not_found', path);
  }
  assert.equal((await get('/v1/models/svc/chorus')).status, 200);
});
