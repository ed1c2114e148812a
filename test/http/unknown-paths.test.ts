/**
 * A request to a path no route serves outside `/api/v1` and `/v1` gets its 404 before its body is read: svc read and
 * parsed such a body first (broken JSON was a 400), up to 32 MiB, without any credential and outside the gateway's body
 * budget, so sixteen unauthenticated uploads to `/nope` took a server's peak RSS from 105 to 451 MB. Under `/api/v1` and
 * `/v1` the same after the surface's identity check (an authenticated caller's body was read, up to the root's limit).
 * The connection then closes, lingering as after a 413 (src/http/lingering-close.ts): what the client still sends is
 * read and dropped within its bounds, never parsed (a request written inside the body is never answered);
 * test/http/refused-before-body.test.ts has a client sending without end cut, and a request without a body keep its
 * connection. Real `svc serve`, raw sockets.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { before, describe, test } from 'node:test';
import { ensureBundle, startServe, suiteCleanups, tempDir } from '../support/process.ts';

before(ensureBundle);

/** A request that, if read out of the body it hides in, answers HTML: it must never be answered. */
const SMUGGLED = 'GET /login HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n';
/** The request written after the body, on the same connection: never answered, the connection closing after the 404. */
const BEHIND = 'GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n';

/** Every status of the answers in `text`. */
const statuses = (text: string) => text.match(/(?<=^|\r\n|\})HTTP\/1\.1 \d{3}/g)?.map((line) => line.slice(9));

/** The first answer of `text` once it has come whole (its declared length), else null. */
function firstAnswer(text: string): { status: number; body: unknown } | null {
  const end = text.indexOf('\r\n\r\n');
  if (end < 0) return null;
  const length = Number(/\r\ncontent-length: (\d+)/i.exec(text.slice(0, end))?.[1]);
  const body = text.slice(end + 4, end + 4 + length);
  if (body.length < length) return null;
  return { status: Number(text.split(' ', 2)[1]), body: JSON.parse(body) };
}

/**
 * Write `head` and the body's `start`, and wait for the first answer (or the connection's end); then, if `rest` is
 * given and the connection is open, write the body's rest and `BEHIND`, and read until the server closes.
 */
function sendInTwo(port: number, head: string, start: string, rest?: Buffer): Promise<{ beforeRest: string; all: string }> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(head + start));
    let text = '';
    let beforeRest: string | null = null;
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      text += chunk;
      if (beforeRest !== null || firstAnswer(text) === null) return;
      beforeRest = text;
      if (rest === undefined) return void socket.end();
      socket.write(rest);
      socket.write(BEHIND);
    });
    // Cut while still writing (lingering's bounds), the client's writes may end in a reset: what it read is the outcome.
    socket.on('error', () => {});
    socket.on('close', () => resolve({ beforeRest: beforeRest ?? text, all: text }));
  });
}

/** The rest of a body, `bytes` long: blanks around a request that would be read if svc lost the body's framing. */
function restHiding(bytes: number): Buffer {
  const rest = Buffer.alloc(bytes, ' ');
  rest.write(SMUGGLED, 1024, 'latin1');
  return rest;
}

describe('an unknown path is answered 404 before its body, and nothing the body holds is read as a request', () => {
  const t = suiteCleanups();
  let port = 0;

  const KEY = 'sk-unknown-paths-0123456789abcdef0123';

  before(async () => {
    // With a key, so that no request is granted an identity without one. A request waiting for a body it is not sent
    // (before the fix) ends at the receipt timeout, without its 404: shortened, from 120 s, so that it fails soon.
    const svc = await startServe(t, tempDir(t), { SVC_API_KEY: KEY, SVC_REQUEST_TIMEOUT_MS: '10000' });
    port = Number(new URL(svc.address).port);
  });

  const declared = (method: string, path: string, bytes: number, headers = '') =>
    `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${headers}Content-Type: application/json\r\nContent-Length: ${bytes}\r\n\r\n`;
  const notFound = (method: string, path: string) => ({ status: 404, body: { error: { code: 'route_not_found', message: `No route for ${method} ${path}.` } } });

  for (const [method, path, bytes] of [
    ['POST', '/nope', 1024 * 1024],
    ['PUT', '/x/y', 8 * 1024 * 1024],
    // A page's path and /health, in a method they do not serve.
    ['POST', '/login', 64 * 1024],
    ['DELETE', '/health', 64 * 1024],
  ] as const) {
    test(`${method} ${path} with ${bytes} bytes declared and 8 sent`, async () => {
      const start = '{"broken';
      const { beforeRest, all } = await sendInTwo(port, declared(method, path, bytes), start, restHiding(bytes - start.length));
      assert.deepEqual(firstAnswer(beforeRest), notFound(method, path));
      assert.match(beforeRest, /\r\nconnection: close\r\n/i);
      assert.deepEqual(statuses(all), ['404'], 'nothing sent after the 404 is read as a request');
      assert.doesNotMatch(all, /<!doctype/i, 'the request inside the body is not answered');
    });
  }

  test('a chunked body, its first chunk sent', async () => {
    const head = 'POST /nope HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n';
    const hiding = restHiding(4096);
    const rest = Buffer.concat([Buffer.from(`${hiding.length.toString(16)}\r\n`), hiding, Buffer.from('\r\n0\r\n\r\n')]);
    const { beforeRest, all } = await sendInTwo(port, head, '5\r\n{"a":\r\n', rest);
    assert.deepEqual(firstAnswer(beforeRest), notFound('POST', '/nope'));
    assert.deepEqual(statuses(all), ['404']);
    assert.doesNotMatch(all, /<!doctype/i);
  });

  test('a body declared past every body limit is the same 404, not a 413: nothing of it is read', async () => {
    const { beforeRest } = await sendInTwo(port, declared('POST', '/nope', 2 ** 40), '{');
    assert.deepEqual(firstAnswer(beforeRest), notFound('POST', '/nope'));
  });

  test('the surfaces keep their order: without a key, /v1 and /api/v1 refuse 401 before the body, known path or not', async () => {
    for (const path of ['/v1/chat/completions', '/v1/nope', '/api/v1/nope']) {
      const { beforeRest } = await sendInTwo(port, declared('POST', path, 1024 * 1024), '{');
      assert.equal(firstAnswer(beforeRest)?.status, 401, path);
    }
  });

  // An authenticated caller's unknown path in a surface was read and parsed before its 404, up to the root's body limit
  // (32 MiB), not its surface's: 2 MiB to /api/v1/nope was a 400 invalid_json where PUT /api/v1/settings gives a 413.
  for (const [path, shape] of [
    ['/api/v1/nope', { error: { code: 'route_not_found', message: 'No route for POST /api/v1/nope.' } }],
    ['/v1/nope', { error: { code: 'unknown_url', message: 'No route for POST /v1/nope.', type: 'invalid_request_error', param: null } }],
  ] as const) {
    test(`authenticated, ${path} with 2 MiB declared and 8 sent is its surface's 404`, async () => {
      const bytes = 2 * 1024 * 1024;
      const start = '{"broken';
      const head = declared('POST', path, bytes, `Authorization: Bearer ${KEY}\r\n`);
      const { beforeRest, all } = await sendInTwo(port, head, start, restHiding(bytes - start.length));
      assert.deepEqual(firstAnswer(beforeRest), { status: 404, body: shape });
      if (path.startsWith('/api/v1')) assert.match(beforeRest, /\r\ncache-control: no-store\r\n/i);
      assert.deepEqual(statuses(all), ['404']);
      assert.doesNotMatch(all, /<!doctype/i, 'the request inside the body is not answered');
    });
  }
});
