/**
 * The registry's family table and candidate order, and the embeddings wire over live upstreams: pass-through,
 * internal batch splitting when the upstream refuses large arrays, and fail-open to the fallback upstream.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, loadConfig } from '../../../src/config.ts';
import { providerErrorStatus } from '../../../src/gateway/providers/errors.ts';
import { createProviderRegistry, familyOf } from '../../../src/gateway/providers/registry.ts';
import { ProviderError } from '../../../src/gateway/providers/types.ts';
import { build, json } from '../../support/build.ts';
import { embeddingsAnswer, sendJson, startFakeUpstream } from '../../support/fake-upstream.ts';
import { validateAgainst } from '../../support/openapi.ts';

function registry(env: Record<string, string>, tenantKeys?: Parameters<typeof createProviderRegistry>[0]['tenantKeys']) {
  return createProviderRegistry({ config: loadConfig(env, { dataDir: null }), ...(tenantKeys ? { tenantKeys } : {}) });
}

test('the family table sends claude* to the messages family and everything else to chat completions', () => {
  for (const id of ['claude-sonnet-4-5', 'claude-3-5-haiku-latest', 'Claude-opus-4-1']) assert.equal(familyOf(id), 'messages', id);
  for (const id of ['gpt-4o', 'o1-mini', 'o3', 'o4-mini', 'chatgpt-4o-latest', 'text-embedding-3-small', 'svc/chorus', 'llama-3-70b', 'mock-429']) {
    assert.equal(familyOf(id), 'chat_completions', id);
  }
});

test('an upstream base address that is not an http(s) URL is a configuration error, not a failure of every call', () => {
  for (const [name, value] of [
    ['CHATCOMP_BASE_URL', 'api.openai.com/v1'],
    ['CHATCOMP_FALLBACK_BASE_URL', 'ftp://fallback.example/v1'],
    ['MESSAGES_BASE_URL', 'https://user:sk-upstream-secret@api.example'],
  ] as const) {
    assert.throws(
      () => loadConfig({ CHATCOMP_API_KEY: 'sk-x', MESSAGES_API_KEY: 'sk-y', [name]: value }, { dataDir: null }),
      (error: Error) => error instanceof ConfigError && error.message.startsWith(`invalid configuration: ${name}: must be`) && !error.message.includes('secret'),
      name,
    );
  }
  // A trailing slash is fine: the providers append their paths to the address without it.
  assert.equal(loadConfig({ CHATCOMP_BASE_URL: 'https://api.example/v1/' }, { dataDir: null }).providers.chatCompletions.baseUrl, 'https://api.example/v1');
});

test('with no live key the mock serves both families', async (t) => {
  const r = registry({});
  t.after(() => r.close());
  assert.equal(r.hasLiveProvider(), false);
  for (const model of ['gpt-4o', 'claude-sonnet-4-5']) {
    const route = await r.route('chat_completions', model, 'ten_default');
    assert.deepEqual(route.candidates.map((p) => p.name), ['mock']);
  }
  // The mock speaks every wire natively.
  for (const wire of ['responses', 'messages'] as const) {
    assert.deepEqual((await r.route(wire, 'gpt-4o', 'ten_default')).candidates.map((p) => p.name), ['mock']);
  }
});

test('candidates are tenant key, platform key, then the fallback upstream, in that order', async (t) => {
  const lookups: string[] = [];
  const r = registry(
    {
      CHATCOMP_API_KEY: 'sk-platform-000000',
      CHATCOMP_BASE_URL: 'http://127.0.0.1:9/v1',
      CHATCOMP_FALLBACK_API_KEY: 'sk-fallback-000000',
      CHATCOMP_FALLBACK_BASE_URL: 'http://127.0.0.1:10/v1',
    },
    async (tenantId, family) => {
      lookups.push(`${tenantId}:${family}`);
      return tenantId === 'ten_byo' ? { apiKey: 'sk-tenant-000000' } : null;
    },
  );
  t.after(() => r.close());
  assert.equal(r.hasLiveProvider(), true);
  const byo = await r.route('chat_completions', 'gpt-4o', 'ten_byo');
  assert.deepEqual(byo.candidates.map((p) => p.name), ['chatcomp-tenant', 'chatcomp', 'chatcomp-fallback']);
  assert.equal(byo.family, 'chat_completions');
  const plain = await r.route('embeddings', 'text-embedding-3-small', 'ten_other');
  assert.deepEqual(plain.candidates.map((p) => p.name), ['chatcomp', 'chatcomp-fallback']);
  assert.ok(plain.candidates.every((p) => p.kind === 'live'));
  assert.deepEqual(lookups, ['ten_byo:chat_completions', 'ten_other:chat_completions']);
  // A live family that lacks a wire is unsupported, never served by the mock or another wire.
  await assert.rejects(r.route('messages', 'gpt-4o', 'ten_other'), (e: unknown) => e instanceof ProviderError && e.kind === 'unsupported');
  // The chat-completions upstream carries the responses wire itself.
  assert.deepEqual((await r.route('responses', 'gpt-4o', 'ten_other')).candidates.map((p) => p.name).slice(-2), ['chatcomp', 'chatcomp-fallback']);
});

test('a claude model on the chat wire is unsupported (400) when MESSAGES_API_KEY is set', async (t) => {
  const r = registry({ MESSAGES_API_KEY: 'messages-key-000000' });
  t.after(() => r.close());
  assert.equal(r.hasLiveProvider(), true);
  let caught: unknown;
  try {
    await r.route('chat_completions', 'claude-sonnet-4-5', 'ten_default');
  } catch (error) {
    caught = error;
  }
  assert.ok(caught instanceof ProviderError && caught.kind === 'unsupported');
  assert.deepEqual(
    { status: providerErrorStatus(caught).status, code: providerErrorStatus(caught).code },
    { status: 400, code: 'unsupported_model' },
  );
  // The chat-completions family is still the mock's, since no chat-completions key is set.
  assert.deepEqual((await r.route('chat_completions', 'gpt-4o', 'ten_default')).candidates.map((p) => p.name), ['mock']);
});

test('live embeddings pass through the upstream and keep the wire shape', async (t) => {
  const upstream = await startFakeUpstream(t, (req, res) => sendJson(res, 200, embeddingsAnswer(req.body.input, 'text-embedding-3-small-2024')));
  const { app } = await build(t, { env: { CHATCOMP_API_KEY: 'sk-embed-test-0000', CHATCOMP_BASE_URL: upstream.baseUrl } });
  const response = await app.inject({
    method: 'POST',
    url: '/v1/embeddings',
    payload: { model: 'text-embedding-3-small', input: ['a', '', 'c'], dimensions: '3', user: 'end-user-1' },
  });
  assert.equal(response.statusCode, 200);
  assert.equal(response.headers['cache-control'], 'no-store');
  const body = json(response);
  assert.equal(validateAgainst('CreateEmbeddingResponse', body), null);
  assert.equal(body.model, 'text-embedding-3-small-2024');
  assert.deepEqual(body.data.map((d: { embedding: number[] }) => d.embedding[0]), [0, 1, 2]);
  assert.deepEqual(upstream.requests[0]!.body, {
    model: 'text-embedding-3-small',
    input: ['a', ' ', 'c'],
    encoding_format: 'float',
    dimensions: 3,
    user: 'end-user-1',
  });
  assert.equal(upstream.requests[0]!.headers.authorization, 'Bearer sk-embed-test-0000');
});

for (const [label, status, message] of [
  ['413', 413, 'Request Entity Too Large'],
  ['400 array too long', 400, "Invalid 'input': array too long. Expected an array with maximum length 4."],
  // OpenAI's cap on the tokens of all inputs together (300,000), which 2048 inputs of ~150 tokens already pass.
  ['400 max tokens per request', 400, 'Requested 453357 tokens, max 300000 tokens per request'],
  // Mistral's caps on the tokens of one batch (16,384), past which 2048 inputs of ~8 tokens already go.
  ['400 too many tokens overall', 400, 'Too many tokens overall, split into more batches.'],
  ['400 too many tokens in batch', 400, 'Too many tokens in batch. Max is 16384 got 17555'],
  // Voyage AI's caps, its message in `detail`: inputs per request, and tokens of one batch (120,000 for voyage-3-large).
  ['400 Voyage batch size limit', 400, { detail: 'The batch size limit is 128. Your batch size is 13.' }],
  [
    '400 Voyage tokens per submitted batch',
    400,
    { detail: "Request to model 'voyage-3-large' failed. The max allowed tokens per submitted batch is 120000. Your batch has 124302 tokens after truncation. Please lower the number of tokens in the batch." },
  ],
] as const) {
  test(`an upstream refusing more than 4 inputs (${label}) is split internally, index-aligned`, async (t) => {
    const upstream = await startFakeUpstream(t, (req, res) => {
      const input = req.body.input as unknown[];
      if (input.length > 4) return sendJson(res, status, typeof message === 'string' ? { error: { message } } : message);
      // The vector names its input: [n] for "item-n", [1000 + first id] for token arrays.
      sendJson(res, 200, embeddingsAnswer(input, 'text-embedding-3-small', (item) =>
        [typeof item === 'string' ? Number.parseInt(item.replace('item-', ''), 10) : 1000 + (item as number[])[0]!, 0]));
    });
    const { app } = await build(t, { env: { CHATCOMP_API_KEY: 'sk-split-test-0000', CHATCOMP_BASE_URL: upstream.baseUrl } });
    const input: unknown[] = Array.from({ length: 13 }, (_, i) => `item-${i}`);
    input[5] = [7, 8];
    input[9] = [9];
    const response = await app.inject({ method: 'POST', url: '/v1/embeddings', payload: { model: 'text-embedding-3-small', input } });
    assert.equal(response.statusCode, 200, response.body);
    const body = json(response);
    assert.equal(body.data.length, 13);
    const firsts = body.data.map((d: { index: number; embedding: number[] }, i: number) => {
      assert.equal(d.index, i);
      return d.embedding[0];
    });
    assert.deepEqual(firsts, [0, 1, 2, 3, 4, 1007, 6, 7, 8, 1009, 10, 11, 12]);
    const accepted = upstream.requests.map((r) => (r.body.input as unknown[]).length).filter((n) => n <= 4);
    assert.equal(accepted.reduce((a, b) => a + b, 0), 13, 'the accepted pieces cover every input once');
    assert.equal(body.usage.prompt_tokens, 13, 'usage sums the parts');
  });
}

test('one input the upstream still refuses as too large is a 4xx for the client, not a loop', async (t) => {
  const upstream = await startFakeUpstream(t, (_req, res) => sendJson(res, 413, { error: { message: 'too large' } }));
  const { app } = await build(t, { env: { CHATCOMP_API_KEY: 'sk-split-test-0000', CHATCOMP_BASE_URL: upstream.baseUrl } });
  const response = await app.inject({ method: 'POST', url: '/v1/embeddings', payload: { model: 'text-embedding-3-small', input: ['a', 'b', 'c'] } });
  assert.equal(response.statusCode, 400);
  assert.equal(json(response).error.code, 'upstream_rejected');
  assert.equal(upstream.requests.length, 3, '3 inputs, then 2, then 1, which still fails: the request stops there');
});

test('embeddings fail open from a failing platform upstream to the fallback upstream', async (t) => {
  const primary = await startFakeUpstream(t, (_req, res) => sendJson(res, 503, { error: { message: 'primary down' } }));
  const fallback = await startFakeUpstream(t, (req, res) => sendJson(res, 200, embeddingsAnswer(req.body.input, 'fallback-model')));
  const { app } = await build(t, {
    env: {
      CHATCOMP_API_KEY: 'sk-primary-00000',
      CHATCOMP_BASE_URL: primary.baseUrl,
      CHATCOMP_FALLBACK_API_KEY: 'sk-fallback-0000',
      CHATCOMP_FALLBACK_BASE_URL: fallback.baseUrl,
    },
  });
  const response = await app.inject({ method: 'POST', url: '/v1/embeddings', payload: { model: 'text-embedding-3-small', input: 'x' } });
  assert.equal(response.statusCode, 200);
  assert.equal(json(response).model, 'fallback-model');
  assert.equal(primary.requests.length, 1);
  assert.equal(fallback.requests[0]!.headers.authorization, 'Bearer sk-fallback-0000');
  // A rejection (the client's mistake) is not failed over.
  primary.handle((_req, res) => sendJson(res, 422, { error: { message: 'bad dimensions' } }));
  const rejected = await app.inject({ method: 'POST', url: '/v1/embeddings', payload: { model: 'text-embedding-3-small', input: 'x' } });
  assert.equal(rejected.statusCode, 422);
  assert.equal(json(rejected).error.message, 'bad dimensions');
  assert.equal(fallback.requests.length, 1);
  // Both failing: the last failure is the answer.
  fallback.handle((_req, res) => sendJson(res, 429, { error: { message: 'slow' } }, { 'retry-after': '3' }));
  primary.handle((_req, res) => sendJson(res, 500, { error: { message: 'down' } }));
  const limited = await app.inject({ method: 'POST', url: '/v1/embeddings', payload: { model: 'text-embedding-3-small', input: 'x' } });
  assert.equal(limited.statusCode, 429);
  assert.equal(limited.headers['retry-after'], '3');
});
