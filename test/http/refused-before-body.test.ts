/**
 * A request refused before its body is read and never to read it, its caller unknown (a 401 of `/v1` or `/api/v1`) or
 * its path (a 404), kept its connection: node drained what the client still sent until it ended, or, from a client
 * sending without end (a terabyte declared, an endless chunked body), until SVC_REQUEST_TIMEOUT_MS, 120 s by default,
 * a socket and bandwidth held by anyone without a credential. Such an answer to a body still coming now closes its
 * connection, lingering as after a 413 (src/http/lingering-close.ts: at most 4 MiB or 2 s), and a request without a
 * body keeps its connection. Real `svc serve`, raw sockets.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { before, describe, test } from 'node:test';
import { loadScaled } from '../support/load-scaled.ts';
import { ensureBundle, startServe, suiteCleanups, tempDir } from '../support/process.ts';

before(ensureBundle);

const KEY = 'sk-refused-before-body-0123456789abcdef';

/** Every status of the answers in `text`. */
const statuses = (text: string) => [...text.matchAll(/(?:^|\r\n|\})HTTP\/1\.1 (\d{3})/g)].map((match) => match[1]);

interface Outcome {
  /** Whether svc ended the connection before the test's deadline (far under the request timeout). */
  closed: boolean;
  /** All the client read. */
  text: string;
}

/**
 * Send `head` then a body without end, as fast as the socket takes it (chunks of 64 KiB when `chunked`), on a
 * half-open connection (one that goes on sending after svc's FIN), until svc ends it or the deadline comes.
 */
function sendWithoutEnd(port: number, head: string, chunked: boolean): Promise<Outcome> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1', allowHalfOpen: true });
    let text = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => (text += chunk));
    // Cut while writing, the client's writes may end in EPIPE or a reset: what it read is the outcome.
    socket.on('error', () => {});
    // Generous: lingering ends a connection within 2 s; the request timeout is ten minutes away.
    const deadline = setTimeout(() => {
      socket.destroy();
      resolve({ closed: false, text });
    }, loadScaled(15_000));
    socket.on('close', () => {
      clearTimeout(deadline);
      resolve({ closed: true, text });
    });
    socket.write(head);
    const blanks = Buffer.alloc(64 * 1024, ' ');
    const piece = chunked ? Buffer.concat([Buffer.from(`${blanks.length.toString(16)}\r\n`), blanks, Buffer.from('\r\n')]) : blanks;
    const more = (): void => {
      while (!socket.destroyed && socket.write(piece));
      if (!socket.destroyed) socket.once('drain', more);
    };
    more();
  });
}

/** Write `requests` on one connection and read until svc closes it (the last says `Connection: close`). */
function pipelined(port: number, requests: string): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(requests));
    let text = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => (text += chunk));
    socket.on('error', () => {});
    socket.on('close', () => resolve(text));
  });
}

describe('an answer given before a body it never reads ends the connection while the body is still coming', () => {
  const t = suiteCleanups();
  let port = 0;

  before(async () => {
    // Only lingering's own bounds may end these connections within the tests' deadline.
    const svc = await startServe(t, tempDir(t), { SVC_API_KEY: KEY, SVC_REQUEST_TIMEOUT_MS: '600000', SVC_IDLE_TIMEOUT_MS: '600000' });
    port = Number(new URL(svc.address).port);
  });

  for (const [path, authorization, status, contentType = 'application/json'] of [
    ['/nope', '', '404'],
    ['/v1/nope', `Authorization: Bearer ${KEY}\r\n`, '404'],
    ['/v1/chat/completions', '', '401'],
    ['/api/v1/keys', '', '401'],
    // Every refusal given before the body: a target refused by the first hook, a content type no parser takes.
    ['/v1/chat/completions%00', `Authorization: Bearer ${KEY}\r\n`, '400'],
    ['/v1/chat/completions', `Authorization: Bearer ${KEY}\r\n`, '415', 'text/plain'],
  ] as const) {
    for (const chunked of [true, false]) {
      test(`POST ${path} ${authorization ? 'with' : 'without'} a key, ${contentType}, ${chunked ? 'an endless chunked body' : 'a terabyte declared'}: ${status}, then cut`, async () => {
        const framing = chunked ? 'Transfer-Encoding: chunked' : `Content-Length: ${1024 ** 4}`;
        const head = `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${authorization}Content-Type: ${contentType}\r\n${framing}\r\n\r\n`;
        const { closed, text } = await sendWithoutEnd(port, head, chunked);
        assert.ok(closed, 'svc ended the connection before the deadline');
        assert.deepEqual(statuses(text), [status]);
        assert.match(text, /\r\nconnection: close\r\n/i);
      });
    }
  }

  test('a request without a body keeps its connection: a GET pipelined behind a 404 and one behind a 401 are answered', async () => {
    const behind = 'GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n';
    for (const [first, status] of [
      ['GET /nope HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n', '404'],
      ['GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n', '401'],
      ['POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n', '401'],
    ] as const) {
      const text = await pipelined(port, first + behind);
      assert.deepEqual(statuses(text), [status, '200'], first.split('\r\n', 1)[0]);
      assert.doesNotMatch(text.slice(0, text.indexOf('\r\n\r\n')), /\r\nconnection: close\r\n/i);
    }
  });
});

describe("a 429 given before the body (a caller's window spent, an address locked out by failed credentials) ends the connection as well", () => {
  const t = suiteCleanups();
  let port = 0;

  before(async () => {
    const svc = await startServe(t, tempDir(t), {
      SVC_API_KEY: KEY,
      SVC_REQUEST_TIMEOUT_MS: '600000',
      SVC_IDLE_TIMEOUT_MS: '600000',
      SVC_RATE_LIMIT_GATEWAY_PER_MINUTE: '1',
      SVC_AUTH_FAILURES_PER_MINUTE: '1',
    });
    port = Number(new URL(svc.address).port);
  });

  test("the gateway's window spent by the key: the next call's endless body is cut after its 429", async () => {
    const first = await pipelined(port, `GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${KEY}\r\nConnection: close\r\n\r\n`);
    assert.deepEqual(statuses(first), ['200']);
    const head = `POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${KEY}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`;
    const { closed, text } = await sendWithoutEnd(port, head, true);
    assert.ok(closed, 'svc ended the connection before the deadline');
    assert.deepEqual(statuses(text), ['429']);
    assert.match(text, /\r\nconnection: close\r\n/i);
  });

  test('an address locked out after a refused credential: its next endless body is cut after its 429', async () => {
    const refused = await pipelined(port, 'GET /api/v1/keys HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer sk-wrong\r\nConnection: close\r\n\r\n');
    assert.deepEqual(statuses(refused), ['401']);
    const head = `POST /api/v1/keys HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer sk-wrong-again\r\nContent-Type: application/json\r\nContent-Length: ${1024 ** 4}\r\n\r\n`;
    const { closed, text } = await sendWithoutEnd(port, head, false);
    assert.ok(closed, 'svc ended the connection before the deadline');
    assert.deepEqual(statuses(text), ['429']);
    assert.match(text, /\r\nconnection: close\r\n/i);
  });
});
