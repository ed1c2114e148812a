/**
 * The official `openai` client against a listening svc: embeddings (the client's default base64 path, which it
 * decodes, and explicit float) and models list/retrieve, including an id with a slash and a missing model.
 */
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { test, type TestContext } from 'node:test';
import OpenAI from 'openai';
import { build } from '../support/build.ts';

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
