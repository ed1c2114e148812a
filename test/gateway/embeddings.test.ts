import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { mockEmbedding } from '../../src/gateway/providers/mock.ts';
import OpenAI from 'openai';
import { build, json } from '../support/build.ts';
import { embeddingsAnswer, sendJson, startFakeUpstream } from '../support/fake-upstream.ts';
import { loadScaled } from '../support/load-scaled.ts';
import { openaiGateway } from '../support/openai-gateway.ts';
import { validateAgainst } from '../support/openapi.ts';

type Built = Awaited<ReturnType<typeof build>>;

async function embed(app: Built['app'], body: unknown) {
  return app.inject({ method: 'POST', url: '/v1/embeddings', payload: body as object });
}

function norm(vector: number[]): number {
  return Math.sqrt(vector.reduce((sum, v) => sum + v * v, 0));
}

function cosine(a: number[], b: number[]): number {
  return a.reduce((sum, v, i) => sum + v * b[i]!, 0) / (norm(a) * norm(b));
}

test('a string input answers one deterministic unit vector in the official response shape', async (t) => {
  const { app } = await build(t);
  const response = await embed(app, { model: 'text-embedding-3-small', input: 'The quick brown fox' });
  assert.equal(response.statusCode, 200);
  assert.equal(response.headers['cache-control'], 'no-store');
  assert.equal(response.headers['x-svc-run-id'], undefined, 'embeddings create no run');
  const body = json(response);
  assert.equal(validateAgainst('CreateEmbeddingResponse', body), null);
  assert.deepEqual(Object.keys(body).sort(), ['data', 'model', 'object', 'usage']);
  assert.deepEqual(Object.keys(body.data[0]).sort(), ['embedding', 'index', 'object']);
  assert.equal(body.object, 'list');
  assert.equal(body.model, 'text-embedding-3-small');
  assert.equal(body.data.length, 1);
  assert.equal(body.data[0].embedding.length, 1536);
  assert.ok(Math.abs(norm(body.data[0].embedding) - 1) < 1e-5);
  assert.ok(body.usage.prompt_tokens > 0);
  assert.equal(body.usage.total_tokens, body.usage.prompt_tokens);
  const again = json(await embed(app, { model: 'text-embedding-3-small', input: 'The quick brown fox' }));
  assert.deepEqual(again.data[0].embedding, body.data[0].embedding, 'same input, same vector');
});

test('the default dimension is 3072 for large models and dimensions is honoured', async (t) => {
  const { app } = await build(t);
  const large = json(await embed(app, { model: 'text-embedding-3-large', input: 'hello' }));
  assert.equal(large.data[0].embedding.length, 3072);
  const ada = json(await embed(app, { model: 'text-embedding-ada-002', input: 'hello' }));
  assert.equal(ada.data[0].embedding.length, 1536);
  const small = json(await embed(app, { model: 'text-embedding-3-large', input: 'hello', dimensions: 256 }));
  assert.equal(small.data[0].embedding.length, 256);
  assert.ok(Math.abs(norm(small.data[0].embedding) - 1) < 1e-5);
});

test('texts that share words embed closer than unrelated texts', async (t) => {
  const { app } = await build(t);
  const body = json(await embed(app, {
    model: 'text-embedding-3-small',
    input: ['the cat sat on the mat', 'on the mat the cat sat', 'quarterly revenue grew strongly'],
  }));
  const [a, b, c] = body.data.map((d: { embedding: number[] }) => d.embedding);
  assert.ok(cosine(a, b) > 0.6, `reordered words are similar (${cosine(a, b)})`);
  assert.ok(Math.abs(cosine(a, c)) < 0.3, `unrelated texts are not (${cosine(a, c)})`);
});

test('all four input forms are accepted with index-aligned output', async (t) => {
  const { app } = await build(t);
  const forms: Array<[unknown, number]> = [
    ['one string', 1],
    [['a', 'b', 'c'], 3],
    [[1212, 318, 257, 1332, 13], 1],
    [[[1212, 318], [257, 1332, 13]], 2],
  ];
  for (const [input, count] of forms) {
    const response = await embed(app, { model: 'text-embedding-3-small', input, dimensions: 8 });
    assert.equal(response.statusCode, 200, JSON.stringify(input));
    const body = json(response);
    assert.equal(body.data.length, count);
    body.data.forEach((item: { index: number }, i: number) => assert.equal(item.index, i));
  }
  const tokens = json(await embed(app, { model: 'text-embedding-3-small', input: [[1, 2, 3]], dimensions: 8 }));
  assert.equal(tokens.usage.prompt_tokens, 3, 'token inputs count their ids');
  assert.deepEqual(tokens.data[0].embedding, mockEmbedding([1, 2, 3], 8));
});

test('empty strings, null chunks and empty token arrays become single-space placeholders in place', async (t) => {
  const { app } = await build(t);
  const body = json(await embed(app, { model: 'text-embedding-3-small', input: ['first', '', null, [], 'last', [5, 6]], dimensions: 16 }));
  assert.equal(body.data.length, 6);
  const space = mockEmbedding(' ', 16);
  assert.deepEqual(body.data.map((d: { index: number }) => d.index), [0, 1, 2, 3, 4, 5]);
  assert.deepEqual(body.data[0].embedding, mockEmbedding('first', 16));
  assert.deepEqual(body.data[1].embedding, space);
  assert.deepEqual(body.data[2].embedding, space);
  assert.deepEqual(body.data[3].embedding, space);
  assert.deepEqual(body.data[4].embedding, mockEmbedding('last', 16));
  assert.deepEqual(body.data[5].embedding, mockEmbedding([5, 6], 16), 'text and token inputs of one request stay aligned');
  const single = json(await embed(app, { model: 'text-embedding-3-small', input: '', dimensions: 16 }));
  assert.deepEqual(single.data[0].embedding, space);
});

test('null, empty and whitespace-only optional fields count as omitted', async (t) => {
  const { app } = await build(t);
  for (const blank of [null, '', '   ']) {
    const response = await embed(app, { model: 'text-embedding-3-small', input: 'x', dimensions: blank, encoding_format: blank, user: blank });
    assert.equal(response.statusCode, 200, JSON.stringify(blank));
    const body = json(response);
    assert.ok(Array.isArray(body.data[0].embedding), 'float is the default');
    assert.equal(body.data[0].embedding.length, 1536);
  }
});

test('a strict digit-string dimensions is coerced; anything else is a 400 naming dimensions', async (t) => {
  const { app } = await build(t);
  const coerced = await embed(app, { model: 'text-embedding-3-small', input: 'x', dimensions: '64' });
  assert.equal(coerced.statusCode, 200);
  assert.equal(json(coerced).data[0].embedding.length, 64);
  for (const bad of ['64.0', ' 64', '6e1', '0x40', 'abc', 0, -3, 65_537, '65537', 2.5, true, [64]]) {
    const response = await embed(app, { model: 'text-embedding-3-small', input: 'x', dimensions: bad });
    assert.equal(response.statusCode, 400, JSON.stringify(bad));
    const error = json(response).error;
    assert.equal(error.type, 'invalid_request_error');
    assert.equal(error.param, 'dimensions');
  }
  const max = await embed(app, { model: 'text-embedding-3-small', input: 'x', dimensions: '3072' });
  assert.equal(json(max).data[0].embedding.length, 3072);
});

test('encoding_format base64 carries little-endian float32 bytes equal to the float vector', async (t) => {
  const { app } = await build(t);
  const float = json(await embed(app, { model: 'text-embedding-3-small', input: ['alpha', 'beta'], encoding_format: 'float' }));
  const b64 = json(await embed(app, { model: 'text-embedding-3-small', input: ['alpha', 'beta'], encoding_format: 'base64' }));
  for (let i = 0; i < 2; i += 1) {
    assert.equal(typeof b64.data[i].embedding, 'string');
    const bytes = Buffer.from(b64.data[i].embedding, 'base64');
    const decoded = Array.from({ length: bytes.length / 4 }, (_, k) => bytes.readFloatLE(k * 4));
    assert.deepEqual(decoded, float.data[i].embedding);
  }
  assert.deepEqual(b64.usage, float.usage);
  const bad = await embed(app, { model: 'text-embedding-3-small', input: 'x', encoding_format: 'binary' });
  assert.equal(bad.statusCode, 400);
  assert.equal(json(bad).error.param, 'encoding_format');
});

test('at most 2048 inputs; more is a chat-completions-shaped 400', async (t) => {
  const { app } = await build(t);
  const ok = await embed(app, { model: 'text-embedding-3-small', input: Array.from({ length: 2048 }, (_, i) => `item ${i}`), dimensions: 4 });
  assert.equal(ok.statusCode, 200);
  assert.equal(json(ok).data.length, 2048);
  const tooMany = await embed(app, { model: 'text-embedding-3-small', input: Array.from({ length: 2049 }, () => 'x') });
  assert.equal(tooMany.statusCode, 400);
  const error = json(tooMany).error;
  assert.deepEqual(Object.keys(error).sort(), ['code', 'message', 'param', 'type']);
  assert.equal(error.type, 'invalid_request_error');
  assert.equal(error.code, 'invalid_request');
  assert.equal(error.param, 'input');
  assert.match(error.message, /2048/);
});

test('one token array is at most 2048 ids, as the OpenAPI document bounds every input array: longer is a chat-completions-shaped 400 before any upstream call', async (t) => {
  const upstream = await startFakeUpstream(t, (req, res) =>
    sendJson(res, 200, { object: 'list', model: 'm', data: req.body.input.map((_: unknown, index: number) => ({ index, embedding: [1, 0] })), usage: { prompt_tokens: 1, total_tokens: 1 } }),
  );
  const { client } = await openaiGateway(t, upstream);
  const ok = await client.embeddings.create({ model: 'text-embedding-3-small', input: Array.from({ length: 2048 }, () => 7) });
  assert.equal(ok.data.length, 1);
  assert.equal(upstream.requests.length, 1);
  const refused = await client.embeddings.create({ model: 'text-embedding-3-small', input: Array.from({ length: 2049 }, () => 7) }).then(
    () => assert.fail('a 2049-id token array was taken'),
    (error: unknown) => error,
  );
  assert.ok(refused instanceof OpenAI.BadRequestError);
  assert.equal(refused.status, 400);
  const error = refused.error as Record<string, unknown>;
  assert.deepEqual(Object.keys(error).sort(), ['code', 'message', 'param', 'type']);
  assert.equal(error.type, 'invalid_request_error');
  assert.equal(error.code, 'invalid_request');
  assert.equal(error.param, 'input');
  assert.match(String(error.message), /2048/);
  assert.equal(upstream.requests.length, 1, 'the refused input never went upstream');
});

test('invalid bodies are 400s that name the parameter', async (t) => {
  const { app } = await build(t);
  const cases: Array<[unknown, string]> = [
    [{ input: 'x' }, 'model'],
    [{ model: '  ', input: 'x' }, 'model'],
    [{ model: 42, input: 'x' }, 'model'],
    [{ model: 'text-embedding-3-small' }, 'input'],
    [{ model: 'text-embedding-3-small', input: null }, 'input'],
    [{ model: 'text-embedding-3-small', input: [] }, 'input'],
    [{ model: 'text-embedding-3-small', input: 7 }, 'input'],
    [{ model: 'text-embedding-3-small', input: [1, -2] }, 'input'],
    [{ model: 'text-embedding-3-small', input: [[1.5]] }, 'input'],
    [{ model: 'text-embedding-3-small', input: ['a', { text: 'b' }] }, 'input'],
    [{ model: 'text-embedding-3-small', input: 'x', user: 5 }, 'user'],
  ];
  for (const [body, param] of cases) {
    const response = await embed(app, body);
    assert.equal(response.statusCode, 400, JSON.stringify(body));
    assert.equal(json(response).error.param, param, JSON.stringify(body));
  }
  const notObject = await app.inject({ method: 'POST', url: '/v1/embeddings', payload: '[1,2]', headers: { 'content-type': 'application/json' } });
  assert.equal(notObject.statusCode, 400);
  assert.equal(json(notObject).error.type, 'invalid_request_error');
});

test('a missing input is "input is required", as a null one is, not the schema library\'s words', async (t) => {
  const { app } = await build(t);
  for (const body of [{ model: 'text-embedding-3-small' }, { model: 'text-embedding-3-small', input: null }]) {
    const response = await embed(app, body);
    assert.equal(response.statusCode, 400, JSON.stringify(body));
    assert.deepEqual(json(response).error, { message: 'input is required', type: 'invalid_request_error', param: 'input', code: 'invalid_request' }, JSON.stringify(body));
  }
});

test('a backend that refuses large batches is split internally and merged index-aligned', async (t) => {
  const { app } = await build(t);
  const input = Array.from({ length: 11 }, (_, i) => (i === 4 ? '' : `text ${i}`));
  // Model names containing mock-batch-N make the mock refuse batches larger than N (docs/providers.md).
  const response = await embed(app, { model: 'text-embedding-3-small-mock-batch-3', input, dimensions: 8 });
  assert.equal(response.statusCode, 200);
  const body = json(response);
  assert.equal(body.data.length, 11);
  body.data.forEach((item: { index: number; embedding: number[] }, i: number) => {
    assert.equal(item.index, i);
    assert.deepEqual(item.embedding, mockEmbedding(input[i] === '' ? ' ' : input[i]!, 8));
  });
});

test('mock failure models map to wire statuses', async (t) => {
  const { app } = await build(t);
  const limited = await embed(app, { model: 'text-embedding-mock-429', input: 'x' });
  assert.equal(limited.statusCode, 429);
  assert.equal(limited.headers['retry-after'], '1');
  assert.equal(json(limited).error.type, 'rate_limit_error');
  const failed = await embed(app, { model: 'text-embedding-mock-5xx', input: 'x' });
  assert.equal(failed.statusCode, 502);
  assert.equal(json(failed).error.type, 'server_error');
  assert.equal(json(failed).error.code, 'upstream_error');
  const timeout = await embed(app, { model: 'text-embedding-mock-timeout', input: 'x' });
  assert.equal(timeout.statusCode, 504);
});

test('claude models on the embeddings wire are unsupported once the messages family is configured', async (t) => {
  const { app } = await build(t, { env: { MESSAGES_API_KEY: 'messages-test-key' } });
  const response = await embed(app, { model: 'claude-sonnet-4-5', input: 'x' });
  assert.equal(response.statusCode, 400);
  assert.equal(json(response).error.code, 'unsupported_model');
  assert.equal(json(response).error.param, 'model');
});

test('a client that goes away cancels the live upstream embeddings call', { timeout: loadScaled(20_000) }, async (t) => {
  const upstream = await startFakeUpstream(t, () => undefined); // accepts the call and never answers
  const { app } = await build(t, { env: { CHATCOMP_API_KEY: 'sk-upstream', CHATCOMP_BASE_URL: upstream.baseUrl } });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as AddressInfo;
  const client = new AbortController();
  const pending = fetch(`http://127.0.0.1:${port}/v1/embeddings`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-local-dev' },
    body: JSON.stringify({ model: 'text-embedding-3-small', input: 'never answered' }),
    signal: client.signal,
  });
  while (upstream.requests.length === 0) await sleep(5);
  client.abort();
  await assert.rejects(pending);
  const closed = await upstream.clientClosed();
  assert.equal(closed.url, '/v1/embeddings');
});

test('an upstream answer that does not give each input exactly one embedding is a 502, never a wrong mapping', async (t) => {
  let data: unknown[] = [];
  const upstream = await startFakeUpstream(t, (_req, res) =>
    sendJson(res, 200, { object: 'list', model: 'text-embedding-3-small', data, usage: { prompt_tokens: 2, total_tokens: 2 } }),
  );
  const { client } = await openaiGateway(t, upstream);
  const answers: Array<[string, unknown[]]> = [
    // Input 0 twice: which of the two is its vector?
    ['a repeated index', [{ index: 0, embedding: [1, 0] }, { index: 1, embedding: [0, 1] }, { index: 0, embedding: [1, 1] }]],
    ['more embeddings than inputs', [{ embedding: [1, 0] }, { embedding: [0, 1] }, { embedding: [1, 1] }]],
    // A string is not an index: taken for the item's position, it paired each input with the other's vector.
    ['indexes that are not integers', [{ index: '1', embedding: [1, 0] }, { index: '0', embedding: [0, 1] }]],
  ];
  for (const [what, answer] of answers) {
    data = answer;
    for (const encoding_format of ['float', 'base64'] as const) {
      await assert.rejects(client.embeddings.create({ model: 'text-embedding-3-small', input: ['first', 'second'], encoding_format }), (error: unknown) => {
        assert.ok(error instanceof OpenAI.APIError, what);
        assert.equal(error.status, 502, what);
        assert.equal(error.code, 'upstream_error', what);
        return true;
      });
    }
  }
  // Indexes in any order, or none at all (the position then), still map each vector to its input.
  data = [{ index: 1, embedding: [0, 1] }, { index: 0, embedding: [1, 0] }];
  const shuffled = await client.embeddings.create({ model: 'text-embedding-3-small', input: ['first', 'second'], encoding_format: 'float' });
  assert.deepEqual(shuffled.data.map((item) => item.embedding), [[1, 0], [0, 1]]);
  data = [{ embedding: [1, 0] }, { embedding: [0, 1] }];
  const positional = await client.embeddings.create({ model: 'text-embedding-3-small', input: ['first', 'second'], encoding_format: 'float' });
  assert.deepEqual(positional.data.map((item) => item.embedding), [[1, 0], [0, 1]]);
});

test('an upstream vector with a value that is not a finite number a float32 holds, base64 that is not whole float32s, or a length unlike the others is a 502', async (t) => {
  let body = '';
  const upstream = await startFakeUpstream(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(`{"object":"list","model":"text-embedding-3-small","data":${body},"usage":{"prompt_tokens":2,"total_tokens":2}}`);
  });
  const { client } = await openaiGateway(t, upstream);
  const base64 = (values: number[]) => JSON.stringify(Buffer.from(new Float32Array(values).buffer).toString('base64'));
  const answers: Array<[string, string]> = [
    // JSON.parse makes it Infinity, which svc's float answer wrote out as null.
    ['a number beyond float64', '[{"index":0,"embedding":[1e999,0.5]},{"index":1,"embedding":[0.5,0.5]}]'],
    // A finite double no float32 holds: the base64 answer's bytes said Infinity, the float answer relayed it as it came.
    ['a number beyond float32', '[{"index":0,"embedding":[0.5,-1e39]},{"index":1,"embedding":[0.5,0.5]}]'],
    ['NaN in base64', `[{"index":0,"embedding":${base64([Number.NaN, 0.5])}},{"index":1,"embedding":[0.5,0.5]}]`],
    // Six bytes: one float32 and two bytes that were dropped without a word.
    ['base64 of a partial float32', `[{"index":0,"embedding":"AACAPwEC"},{"index":1,"embedding":[0.5]}]`],
    ['a string in a vector', '[{"index":0,"embedding":["0.5",0.5]},{"index":1,"embedding":[0.5,0.5]}]'],
    ['an empty vector', '[{"index":0,"embedding":[]},{"index":1,"embedding":[]}]'],
    ['vectors of two lengths', '[{"index":0,"embedding":[0.5,0.5]},{"index":1,"embedding":[0.5]}]'],
  ];
  for (const [what, data] of answers) {
    body = data;
    for (const encoding_format of ['float', 'base64'] as const) {
      await assert.rejects(client.embeddings.create({ model: 'text-embedding-3-small', input: ['first', 'second'], encoding_format }), (error: unknown) => {
        assert.ok(error instanceof OpenAI.APIError, what);
        assert.equal(error.status, 502, what);
        return true;
      });
    }
  }
  // The largest float32 (3.4028234663852886e38) and a double that rounds to it are as much a float32's as 1e-40 is.
  body = `[{"index":0,"embedding":${base64([0.25, -1])}},{"index":1,"embedding":[3.4028235e38,1e-40]}]`;
  const fine = await client.embeddings.create({ model: 'text-embedding-3-small', input: ['first', 'second'], encoding_format: 'float' });
  assert.deepEqual(fine.data.map((item) => item.embedding), [[0.25, -1], [3.4028235e38, 1e-40]]);
  const fineBase64 = await client.embeddings.create({ model: 'text-embedding-3-small', input: ['first', 'second'], encoding_format: 'base64' });
  assert.equal(fineBase64.data[1]!.embedding, Buffer.from(new Float32Array([3.4028234663852886e38, 1e-40]).buffer).toString('base64'));
});

test('parts of a split batch whose vectors differ in length (a model switched mid-way) are a 502, never a mixed answer: halves of a batch too large, and text beside token inputs', async (t) => {
  let accepted = 0;
  const upstream = await startFakeUpstream(t, (req, res) => {
    const input = req.body.input as unknown[];
    if (input.length > 2) return sendJson(res, 400, { error: { message: "Invalid 'input': array too long. Expected an array with maximum length 2." } });
    accepted += 1;
    // The first part the upstream takes has 3 dimensions, every later one 2.
    sendJson(res, 200, embeddingsAnswer(input, 'text-embedding-3-small', () => (accepted === 1 ? [0.5, 0.5, 0.5] : [0.5, 0.5])));
  });
  const { client } = await openaiGateway(t, upstream);
  const inputs: Array<[string, string[] | Array<string | number[]>]> = [
    ['halves of a batch too large', ['a', 'b', 'c', 'd']],
    ['text beside token inputs', ['a', [1, 2]]],
  ];
  for (const [what, input] of inputs) {
    accepted = 0;
    await assert.rejects(client.embeddings.create({ model: 'text-embedding-3-small', input: input as string[], encoding_format: 'float' }), (error: unknown) => {
      assert.ok(error instanceof OpenAI.APIError, what);
      assert.equal(error.status, 502, what);
      assert.equal(error.code, 'upstream_error', what);
      return true;
    });
    assert.equal(accepted, 2, `${what}: both parts were answered`);
  }
});

test('fields svc does not know reach the live upstream untouched, as on the chat wire; encoding_format upstream stays float', async (t) => {
  const upstream = await startFakeUpstream(t, (req, res) =>
    sendJson(res, 200, { object: 'list', model: 'nv-embedqa', data: req.body.input.map((_: unknown, index: number) => ({ index, embedding: [index, 1] })), usage: { prompt_tokens: 2, total_tokens: 2 } }),
  );
  const { client } = await openaiGateway(t, upstream);
  // A compatible provider's asymmetric model needs `input_type` (a query embeds differently from a passage).
  const body = { model: 'nv-embedqa', input: ['a', 'b'], user: 'u-1', input_type: 'query', truncate: 'END', extra_options: { normalize: true }, dropped: null };
  const answer = await client.embeddings.create(body as OpenAI.EmbeddingCreateParams);
  assert.deepEqual(Array.from(answer.data[1]!.embedding), [1, 1]);
  assert.deepEqual(upstream.requests[0]!.body, {
    model: 'nv-embedqa',
    input: ['a', 'b'],
    encoding_format: 'float',
    user: 'u-1',
    input_type: 'query',
    truncate: 'END',
    extra_options: { normalize: true },
  });
});

test('an upstream usage whose prompt_tokens is not a token count is counted locally, as the mock counts the same inputs; one with only total_tokens is that count', async (t) => {
  let usage: unknown = null;
  const upstream = await startFakeUpstream(t, (_req, res) =>
    sendJson(res, 200, { object: 'list', model: 'text-embedding-3-small', data: [{ index: 0, embedding: [1, 0] }, { index: 1, embedding: [0, 1] }], ...(usage === undefined ? {} : { usage }) }),
  );
  const { client } = await openaiGateway(t, upstream);
  const input = ['a first text to embed', 'a second'];
  const { app } = await build(t);
  const local = json(await embed(app, { model: 'text-embedding-3-small', input })).usage;
  assert.ok(local.prompt_tokens > 0);
  for (const odd of [undefined, null, {}, { prompt_tokens: -5, total_tokens: -5 }, { prompt_tokens: '7' }, { prompt_tokens: 2.5 }, 'junk']) {
    usage = odd;
    const answer = await client.embeddings.create({ model: 'text-embedding-3-small', input, encoding_format: 'float' });
    assert.deepEqual(answer.usage, local, JSON.stringify(odd));
  }
  usage = { prompt_tokens: 9, total_tokens: 9 };
  assert.deepEqual((await client.embeddings.create({ model: 'text-embedding-3-small', input, encoding_format: 'float' })).usage, { prompt_tokens: 9, total_tokens: 9 }, 'a reported count wins');
  // Voyage AI (and some compatible servers) report only total_tokens: an embedding's tokens are all input tokens.
  for (const reported of [{ total_tokens: 11 }, { prompt_tokens: null, total_tokens: 11 }]) {
    usage = reported;
    const answer = await client.embeddings.create({ model: 'text-embedding-3-small', input, encoding_format: 'float' });
    assert.deepEqual(answer.usage, { prompt_tokens: 11, total_tokens: 11 }, JSON.stringify(reported));
  }
});

test("dimensions past 3072 reach a live upstream, whose model's size is the authority (4096-dimension models exist); the mock refuses a size it has no model for", async (t) => {
  const upstream = await startFakeUpstream(t, (req, res) =>
    sendJson(res, 200, { object: 'list', model: req.body.model, data: [{ object: 'embedding', index: 0, embedding: new Array(req.body.dimensions).fill(0.01) }], usage: { prompt_tokens: 1, total_tokens: 1 } }),
  );
  const { client } = await openaiGateway(t, upstream);
  const wide = await client.embeddings.create({ model: 'qwen3-embedding-8b', input: 'x', dimensions: 4096, encoding_format: 'float' });
  assert.equal(wide.data[0]!.embedding.length, 4096);
  assert.equal(upstream.requests[0]!.body.dimensions, 4096);

  const { app } = await build(t);
  const mock = await embed(app, { model: 'text-embedding-3-large', input: 'x', dimensions: 4096 });
  assert.equal(mock.statusCode, 400);
  assert.equal(json(mock).error.type, 'invalid_request_error');
  assert.match(json(mock).error.message, /dimensions/);
});

test('the mock bounds the values it builds (inputs × dimensions, 1,048,576): past it a clear 400 before any vector is made, split batches counted whole', async (t) => {
  const { app } = await build(t);
  const input = Array.from({ length: 2048 }, (_, i) => `item ${i}`);
  for (const model of ['text-embedding-3-large', 'text-embedding-3-large-mock-batch-256']) {
    const over = await embed(app, { model, input });
    assert.equal(over.statusCode, 400, model);
    const error = json(over).error;
    assert.equal(error.type, 'invalid_request_error', model);
    assert.match(error.message, /2048 inputs × 3072 dimensions/, model);
    assert.match(error.message, /1048576/, model);
  }
  const past = await embed(app, { model: 'text-embedding-3-small', input, dimensions: 513 });
  assert.equal(past.statusCode, 400);
  // At the bound: 2048 × 512 values.
  const at = await embed(app, { model: 'text-embedding-3-small', input, dimensions: 512, encoding_format: 'base64' });
  assert.equal(at.statusCode, 200);
  assert.equal(json(at).data.length, 2048);
});

test('a backend that takes few inputs per call is asked again in chunks of the size it took, not each half refused anew: n inputs cost log2(n) refusals, never n - 1', async (t) => {
  let limit = 1;
  const sizes: number[] = [];
  const upstream = await startFakeUpstream(t, (req, res) => {
    const input = req.body.input as string[];
    sizes.push(input.length);
    if (input.length > limit) return sendJson(res, 400, { error: { message: `Invalid 'input': array too long. Expected an array with maximum length ${limit}.` } });
    sendJson(res, 200, embeddingsAnswer(input, 'text-embedding-3-small', (text) => [Number((text as string).slice(1)), 1]));
  });
  const { client } = await openaiGateway(t, upstream);
  // [inputs, what the backend takes, the most refusals: one per halving down to a size it takes]
  const cases: Array<[number, number, number]> = [
    [16, 1, 4], // halving each part apart: 15 refused calls, 31 in all (2n - 1)
    [2048, 100, 5], // 2048, 1024, 512, 256, 128 refused; was 31
    [11, 3, 2], // 11, 6 refused; then chunks of 3, the last one shorter
  ];
  for (const [count, taken, refusals] of cases) {
    limit = taken;
    sizes.length = 0;
    const input = Array.from({ length: count }, (_, i) => `t${i}`);
    const answer = await client.embeddings.create({ model: 'text-embedding-3-small', input, encoding_format: 'float' });
    assert.deepEqual(answer.data.map((item) => [item.index, item.embedding[0]]), input.map((_, i) => [i, i]), `${count} inputs, ${taken} a call: index-aligned`);
    assert.equal(answer.usage.prompt_tokens, count);
    const refused = sizes.filter((size) => size > taken).length;
    assert.ok(refused <= refusals, `${count} inputs, ${taken} a call: ${refused} refused calls (${sizes.length} in all), at most ${refusals} expected`);
    const embedded = sizes.filter((size) => size <= taken).reduce((sum, size) => sum + size, 0);
    assert.equal(embedded, count, 'each input embedded once');
  }
});

test("an upstream answer's empty or blank model names no model: the client gets the model it asked for, as it does where the upstream sent none; a named one is relayed as sent (the official client, float and base64)", async (t) => {
  let model: unknown = '';
  const upstream = await startFakeUpstream(t, (req, res) => sendJson(res, 200, { ...embeddingsAnswer(req.body.input, 'unused'), model }));
  const { client } = await openaiGateway(t, upstream);
  for (const sent of ['', '  ', undefined, null, 42]) {
    model = sent;
    for (const encoding_format of ['float', 'base64'] as const) {
      const answer = await client.embeddings.create({ model: 'text-embedding-3-small', input: ['a', 'b'], encoding_format });
      assert.equal(answer.model, 'text-embedding-3-small', `${JSON.stringify(sent)}, ${encoding_format}`);
    }
  }
  model = 'text-embedding-3-small-2024-01-25';
  assert.equal((await client.embeddings.create({ model: 'text-embedding-3-small', input: 'a' })).model, 'text-embedding-3-small-2024-01-25');
});

test("an upstream vector's -0 keeps its sign where svc encodes the vector as base64 (the official client's default, which decodes it); a float answer writes it 0, as JSON.stringify does (docs/gateway.md)", async (t) => {
  const upstream = await startFakeUpstream(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"object":"list","model":"text-embedding-3-small","data":[{"object":"embedding","index":0,"embedding":[-0.0,0.5,-0]}],"usage":{"prompt_tokens":1,"total_tokens":1}}');
  });
  const { client } = await openaiGateway(t, upstream);
  const decoded = (await client.embeddings.create({ model: 'text-embedding-3-small', input: 'a' })).data[0]!.embedding;
  assert.ok(Object.is(decoded[0], -0) && Object.is(decoded[2], -0), `signs lost: ${decoded.map((value) => (Object.is(value, -0) ? '-0' : String(value)))}`);
  const float = (await client.embeddings.create({ model: 'text-embedding-3-small', input: 'a', encoding_format: 'float' })).data[0]!.embedding;
  assert.ok(float.length === 3 && float[0] === 0 && float[1] === 0.5 && float[2] === 0, `${float}`);
});

test("the mock refuses an input of more than 8,192 tokens as the chat-completions family's upstream does (the OpenAPI document's bound for every embedding model), with its words: a 400, a text alone or in a batch, or a token array in a batch; 8,192 are embedded", async (t) => {
  const { app } = await build(t);
  const tokens = (count: number) => Array.from({ length: count }, (_, i) => i % 1000);
  // ' word' is one token of the tokenizer's: 9,000 of them after the first.
  const longText = `word${' word'.repeat(8999)}`;
  const cases: Array<[string, unknown, number]> = [
    // One token array alone is at most 2048 ids (the wire's 400 above); in an array of them, one is not bounded.
    ['a token array of 9,000 ids in a batch', [tokens(3), tokens(9000)], 9000],
    ['a text of 9,000 tokens', longText, 9000],
    ['a text of 9,000 tokens in a batch of a split model', ['short', longText], 9000],
  ];
  for (const [what, input, requested] of cases) {
    const model = what.includes('split') ? 'text-embedding-3-small-mock-batch-1' : 'text-embedding-3-small';
    const refused = await embed(app, { model, input });
    assert.equal(refused.statusCode, 400, what);
    const error = json(refused).error;
    assert.equal(error.type, 'invalid_request_error', what);
    assert.equal(
      error.message,
      `This model's maximum context length is 8192 tokens, however you requested ${requested} tokens (${requested} in your prompt; 0 for the completion). Please reduce your prompt; or completion length.`,
      what,
    );
  }
  const at = await embed(app, { model: 'text-embedding-3-small', input: [tokens(8192), `word${' word'.repeat(8191)}`] });
  assert.equal(at.statusCode, 200);
  assert.equal(json(at).usage.prompt_tokens, 2 * 8192);
});
