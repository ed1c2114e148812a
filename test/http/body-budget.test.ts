/**
 * The request bodies of gateway calls in progress are bounded in total (SVC_GATEWAY_INFLIGHT_BODY_BYTES): a call whose
 * body would cross the budget is refused with a 503 and `retry-after` in its wire's shape, before its body is read; a
 * body is held until its response closes; one call passes whatever its size when nothing else is held.
 */
import assert from 'node:assert/strict';
import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import { test } from 'node:test';
import { build } from '../support/build.ts';
import { completion, sendJson, startFakeUpstream } from '../support/fake-upstream.ts';
import { loadScaled } from '../support/load-scaled.ts';

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
async function gateway(t: test.TestContext, env: Record<string, string> = {}) {
  // Registered before the app's own teardown, which waits for the calls in progress: a failed assertion must not
  // leave a half-sent body holding it.
  const started: ClientRequest[] = [];
  t.after(() => {
    for (const req of started) req.destroy();
  });
  // A prompt starting `#slow#` is answered after 1.5 s.
  const upstream = await startFakeUpstream(t, async (request, res) => {
    if (String(request.body?.messages?.[0]?.content).startsWith('#slow#')) await new Promise((resolve) => setTimeout(resolve, 1_500));
    if (!res.destroyed) sendJson(res, 200, completion('answered'));
  });
  const { app } = await build(t, {
    env: { CHATCOMP_API_KEY: 'sk-upstream', CHATCOMP_BASE_URL: upstream.baseUrl, SVC_GATEWAY_INFLIGHT_BODY_BYTES: String(BUDGET), ...env },
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
  /**
   * Whether nothing is held beyond what the caller holds now (`holding` bytes of the budget): a body of the rest of
   * the budget, less 4 KiB, must pass. Posted in full; the caller's holdings are bodies half sent.
   */
  const budgetLeftIs = async (holding: number): Promise<boolean> => {
    const answer = await post(chatBodyOf(BUDGET - holding - 4 * KiB));
    assert.ok(answer.status === 200 || answer.status === 503, answer.body);
    return answer.status === 200;
  };
  /** Hold `count` bodies of `bytes` each, their first 1,000 bytes sent; `end` sends the rest. */
  const holdBodies = async (count: number, bytes: number) => {
    const calls = Array.from({ length: count }, () => {
      const body = chatBodyOf(bytes);
      const call = begin('/v1/chat/completions', { 'content-length': body.length });
      call.req.write(body.subarray(0, 1000));
      return { ...call, rest: body.subarray(1000) };
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    return {
      bytes: count * chatBodyOf(bytes).length,
      async end() {
        for (const call of calls) call.req.end(call.rest);
        for (const call of calls) assert.equal((await call.answer).status, 200);
      },
    };
  };
  return { url, upstream, begin, post, budgetLeftIs, holdBodies };
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

test('a chunked body sent in small chunks is refused at the chunk that crosses the budget, before it ends', async (t) => {
  const { begin } = await gateway(t);
  const held = chatBodyOf(700 * KiB);
  const slow = begin('/v1/chat/completions', { 'content-length': held.length });
  slow.req.write(held.subarray(0, 1000));
  await new Promise((resolve) => setTimeout(resolve, 100));

  // 1 KiB chunks (each write is one) until 8 KiB past the budget: less than a gathered piece of 64 KiB past it, so a
  // count of the gathered pieces had not seen the crossing yet, and the call waited for more of its body.
  const body = chatBodyOf(500 * KiB);
  const crossing = BUDGET - held.length + 8 * KiB;
  const chunked = begin('/v1/chat/completions', { 'transfer-encoding': 'chunked' });
  for (let sent = 0; sent < crossing; sent += KiB) chunked.req.write(body.subarray(sent, sent + KiB));
  // The body is never ended: only the crossing chunk can have answered it.
  const unanswered = new Promise<null>((resolve) => setTimeout(() => resolve(null), loadScaled(10_000)).unref());
  const refused = await Promise.race([chunked.answer, unanswered]);
  assert.equal(refused?.status, 503, refused?.body ?? 'no answer while the body was incomplete');
  assert.equal(refused.headers['retry-after'], '1');

  slow.req.end(held.subarray(1000));
  assert.equal((await slow.answer).status, 200);
});

test("the management API's bodies are not counted against the gateway's budget", async (t) => {
  const { url, holdBodies } = await gateway(t);
  // The gateway's budget all but full: 900 of its 1024 KiB.
  const held = await holdBodies(3, 300 * KiB);
  // 400 KiB more would be past it; the API answers it for what it is (a key's fields are not a chat), not 503.
  const answer = await fetch(`${url}/api/v1/keys`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-local-dev' },
    body: chatBodyOf(400 * KiB),
  });
  assert.notEqual(answer.status, 503, await answer.text());
  assert.equal(answer.status, 400);
  await held.end();
});

test('a call queued behind another on a pipelined connection releases its body when the connection closes before its answer went out', async (t) => {
  const { url, budgetLeftIs, holdBodies } = await gateway(t);
  const { port } = new URL(url);
  // One connection: a slow call, then a 200 KiB one behind it, answered at once but queued behind the first.
  const socket = connect(Number(port), '127.0.0.1');
  await new Promise((resolve) => socket.once('connect', resolve));
  const requestText = (body: Buffer) =>
    Buffer.concat([
      Buffer.from(`POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer sk-local-dev\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n`),
      body,
    ]);
  socket.write(Buffer.concat([requestText(Buffer.from(JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: '#slow# first' }] }))), requestText(chatBodyOf(200 * KiB))]));
  await new Promise((resolve) => setTimeout(resolve, 400));
  socket.destroy();
  await new Promise((resolve) => setTimeout(resolve, 200));

  const held = await holdBodies(4, 200 * KiB);
  assert.ok(await budgetLeftIs(held.bytes), 'the queued call released its 200 KiB');
  await held.end();
});

test("a chunked body's bytes that arrive after its answer (a 413) are not counted", async (t) => {
  const { url, budgetLeftIs, holdBodies } = await gateway(t, { SVC_GATEWAY_BODY_LIMIT_BYTES: String(256 * KiB) });
  const { port } = new URL(url);
  // A chunked body past the body limit, sent all at once: most of it arrives after svc answered 413, and it is more
  // than the whole budget.
  const socket = connect(Number(port), '127.0.0.1');
  await new Promise((resolve) => socket.once('connect', resolve));
  let answer = '';
  socket.on('data', (data: Buffer) => (answer += data.toString('latin1')));
  socket.on('error', () => undefined);
  socket.write('POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer sk-local-dev\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n');
  const chunk = Buffer.alloc(128 * KiB, 0x20);
  for (let i = 0; i < 20; i++) socket.write(Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')]));
  socket.write('0\r\n\r\n');
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  socket.destroy();
  assert.match(answer, /^HTTP\/1\.1 413/);

  const held = await holdBodies(4, 200 * KiB);
  assert.ok(await budgetLeftIs(held.bytes), 'nothing of the chunked call is held');
  await held.end();
});

test('a caller over its rate limit gets its 429, not the budget\'s 503, and holds nothing', async (t) => {
  const { post, holdBodies } = await gateway(t, { SVC_RATE_LIMIT_GATEWAY_PER_MINUTE: '3' });
  const held = await holdBodies(1, 900 * KiB);
  assert.equal((await post(chatBodyOf(2 * KiB))).status, 200);
  assert.equal((await post(chatBodyOf(2 * KiB))).status, 200);
  const limited = await post(chatBodyOf(400 * KiB));
  assert.equal(limited.status, 429, limited.body);
  await held.end();
});

/** Raw HTTP/1.1 on one connection: what it sends, and every status line it gets back. */
async function rawConnection(url: string) {
  const socket = connect(Number(new URL(url).port), '127.0.0.1');
  await new Promise((resolve) => socket.once('connect', resolve));
  let received = '';
  socket.on('data', (data: Buffer) => (received += data.toString('latin1')));
  socket.on('error', () => undefined);
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  return {
    socket,
    closed,
    statuses: () => [...received.matchAll(/HTTP\/1\.1 (\d+)/g)].map((match) => Number(match[1])),
    async waitFor(count: number, ms = 3_000) {
      const until = Date.now() + loadScaled(ms);
      while (this.statuses().length < count && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 20));
      return this.statuses();
    },
  };
}

const chunkedOf = (body: Buffer) => Buffer.concat([Buffer.from(`${body.length.toString(16)}\r\n`), body, Buffer.from('\r\n0\r\n\r\n')]);

test('a chunked body a GET route never reads does not stall the connection for its next request; a refusal before the body (404, 415) closes it', async (t) => {
  const { url } = await gateway(t);
  // A refusal given before the body closes its connection (src/http/surface.ts): the request behind is not answered,
  // and the connection ends, lingering within its bounds, not at the request timeout.
  const cases = [
    ['GET', '/v1/models', 'application/json', [200, 200]],
    ['GET', '/v1/nope', 'application/json', [404]],
    ['POST', '/v1/chat/completions', 'application/xml', [415]],
  ] as const;
  for (const [method, path, type, statuses] of cases) {
    const connection = await rawConnection(url);
    connection.socket.write(`${method} ${path} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer sk-local-dev\r\ncontent-type: ${type}\r\ntransfer-encoding: chunked\r\n\r\n`);
    connection.socket.write(chunkedOf(Buffer.alloc(200 * KiB, 0x20)));
    await new Promise((resolve) => setTimeout(resolve, 200));
    connection.socket.write('GET /v1/models HTTP/1.1\r\nhost: x\r\nauthorization: Bearer sk-local-dev\r\n\r\n');
    if (statuses.length === 1) await connection.closed;
    assert.deepEqual(await connection.waitFor(statuses.length), statuses, `${method} ${path}`);
    connection.socket.destroy();
  }
});

test('many large bodies pipelined on one connection add one close listener to it, not one each', async (t) => {
  const { url, budgetLeftIs } = await gateway(t);
  const warnings: Error[] = [];
  const onWarning = (warning: Error) => warnings.push(warning);
  process.on('warning', onWarning);
  t.after(() => process.off('warning', onWarning));
  const connection = await rawConnection(url);
  const body = chatBodyOf(70 * KiB);
  const call = `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer sk-local-dev\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n`;
  connection.socket.write(Buffer.concat(Array.from({ length: 12 }, () => Buffer.concat([Buffer.from(call), body]))));
  assert.deepEqual(await connection.waitFor(12), Array(12).fill(200));
  connection.socket.destroy();
  await new Promise((resolve) => setTimeout(resolve, 100));
  assert.deepEqual(warnings.map((warning) => warning.name), []);
  assert.ok(await budgetLeftIs(0), 'every body was released');
});
