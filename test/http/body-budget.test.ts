/**
 * The request bodies of gateway calls in progress are bounded in total (SVC_GATEWAY_INFLIGHT_BODY_BYTES): a call whose
 * body would cross the budget is refused with a 503 and `retry-after` in its wire's shape, before its body is read; a
 * body is held until its response closes; one call passes whatever its size when nothing else is held.
 */
import assert from 'node:assert/strict';
import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { test } from 'node:test';
import { build } from '../support/build.ts';
import { completion, sendJson, startFakeUpstream } from '../support/fake-upstream.ts';

const KiB = 1024;
const BUDGET = 1024 * KiB;

/** A chat body of about `bytes` bytes. */
function chatBodyOf(bytes: number, path = '/v1/chat/completions'): Buffer {
  const padding = 'x'.repeat(Math.max(0, bytes - 200));
  const body =
    path === '/v1/messages'
      ? { model: 'claude-3-5-haiku-latest', max_tokens: 16, messages: [{ role: 'user', content: padding }] }
      : { model: 'gpt-4o-mini', messages: [{ role: 'user', content: padding }] };
  return Buffer.from(JSON.stringify(body));
}

interface Answer {
  status: number;
  headers: IncomingMessage['headers'];
  body: string;
}

/** A gateway over a fake upstream, listening, and clients of it (`begin` a POST whose body the caller writes, or `post` one). */
async function gateway(t: test.TestContext) {
  // Registered before the app's own teardown, which waits for the calls in progress: a failed assertion must not
  // leave a half-sent body holding it.
  const started: ClientRequest[] = [];
  t.after(() => {
    for (const req of started) req.destroy();
  });
  const upstream = await startFakeUpstream(t, (_request, res) => sendJson(res, 200, completion('answered')));
  const { app } = await build(t, {
    env: { CHATCOMP_API_KEY: 'sk-upstream', CHATCOMP_BASE_URL: upstream.baseUrl, SVC_GATEWAY_INFLIGHT_BODY_BYTES: String(BUDGET) },
  });
  const url = await app.listen({ port: 0, host: '127.0.0.1' });

  const begin = (path: string, headers: Record<string, string | number>): { req: ClientRequest; answer: Promise<Answer> } => {
    const req = httpRequest(`${url}${path}`, { method: 'POST', agent: false, headers: { 'content-type': 'application/json', authorization: 'Bearer sk-local-dev', ...headers } });
    started.push(req);
    const answer = new Promise<Answer>((resolve, reject) => {
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      });
      req.on('error', reject);
    });
    return { req, answer };
  };
  const post = (body: Buffer, path = '/v1/chat/completions'): Promise<Answer> => {
    const { req, answer } = begin(path, { 'content-length': body.length });
    req.end(body);
    return answer;
  };
  return { upstream, begin, post };
}

test('a body that would take the bodies in progress past the budget is refused with a 503 and retry-after, and passes once they are done', async (t) => {
  const { upstream, begin, post } = await gateway(t);
  // A call holding 700 KiB: its body is declared, half of it sent.
  const held = chatBodyOf(700 * KiB);
  const slow = begin('/v1/chat/completions', { 'content-length': held.length });
  slow.req.write(held.subarray(0, held.length / 2));
  await new Promise((resolve) => setTimeout(resolve, 100));

  const refused = await post(chatBodyOf(400 * KiB));
  assert.equal(refused.status, 503, refused.body);
  assert.equal(refused.headers['retry-after'], '1');
  const error = JSON.parse(refused.body).error;
  assert.equal(error.type, 'server_error');
  assert.equal(error.code, 'busy');
  assert.match(error.message, /SVC_GATEWAY_INFLIGHT_BODY_BYTES/);

  // The messages wire refuses in its own shape (the SDK retries overloaded_error).
  const messages = await post(chatBodyOf(400 * KiB, '/v1/messages'), '/v1/messages');
  assert.equal(messages.status, 503, messages.body);
  assert.deepEqual(JSON.parse(messages.body).type, 'error');
  assert.equal(JSON.parse(messages.body).error.type, 'overloaded_error');

  // A second large body that fits is held beside the first: 1000 of the 1024 KiB.
  const second = chatBodyOf(300 * KiB);
  const other = begin('/v1/chat/completions', { 'content-length': second.length });
  other.req.write(second.subarray(0, 1000));
  await new Promise((resolve) => setTimeout(resolve, 100));
  // A small body (at most 64 KiB) is never counted nor refused, however full the budget.
  assert.equal((await post(chatBodyOf(60 * KiB))).status, 200);
  // A body declared past the body limit is the limit's 413, not the budget's 503.
  const oversized = begin('/v1/chat/completions', { 'content-length': 33 * 1024 * KiB });
  oversized.req.write('{');
  assert.equal((await oversized.answer).status, 413);

  other.req.end(second.subarray(1000));
  assert.equal((await other.answer).status, 200);
  slow.req.end(held.subarray(held.length / 2));
  assert.equal((await slow.answer).status, 200);
  // Released when its response closed: the refused size passes now.
  assert.equal((await post(chatBodyOf(400 * KiB))).status, 200);
  // The refused calls reached no upstream: the small one, the two held ones and the retried one did.
  assert.equal(upstream.requests.length, 4);
});

test('one call passes whatever its size when no other body is held', async (t) => {
  const { post } = await gateway(t);
  assert.equal((await post(chatBodyOf(BUDGET + 300 * KiB))).status, 200);
  assert.equal((await post(chatBodyOf(BUDGET + 300 * KiB))).status, 200, 'and it is released');
});

test('a chunked body is counted as it arrives and refused at the chunk that crosses the budget', async (t) => {
  const { upstream, begin, post } = await gateway(t);
  const held = chatBodyOf(700 * KiB);
  const slow = begin('/v1/chat/completions', { 'content-length': held.length });
  slow.req.write(held.subarray(0, 1000));
  await new Promise((resolve) => setTimeout(resolve, 100));

  // No content-length: node sends it chunked.
  const body = chatBodyOf(500 * KiB);
  const chunked = begin('/v1/chat/completions', { 'transfer-encoding': 'chunked' });
  chunked.req.write(body.subarray(0, 200 * KiB));
  await new Promise((resolve) => setTimeout(resolve, 100));
  chunked.req.end(body.subarray(200 * KiB));
  const refused = await chunked.answer;
  assert.equal(refused.status, 503, refused.body);
  assert.equal(refused.headers['retry-after'], '1');

  // A small chunked body fits.
  const small = begin('/v1/chat/completions', { 'transfer-encoding': 'chunked' });
  small.req.end(chatBodyOf(2 * KiB));
  assert.equal((await small.answer).status, 200);

  slow.req.end(held.subarray(1000));
  assert.equal((await slow.answer).status, 200);
  // What the refused chunked call had counted was released with it.
  const again = begin('/v1/chat/completions', { 'transfer-encoding': 'chunked' });
  again.req.end(body);
  assert.equal((await again.answer).status, 200);
  assert.equal(upstream.requests.length, 3);
});
