/**
 * A body over the limit is answered 413 while the client is still sending it, and the client must get to read that
 * answer: svc closed the connection at once after it, with the rest of the body unread, so the kernel reset it and the
 * client got EPIPE / ECONNRESET (undici, the CLI) or APIConnectionError (the openai SDK) instead, in a third to two
 * thirds of the tries. The connection now lingers, reading and discarding, within bounds that a client sending forever
 * meets (src/http/lingering-close.ts), and what it reads is never parsed: a request pipelined behind the refused body
 * was run though its answer could never be sent. Real `svc serve`, real sockets.
 */
import assert from 'node:assert/strict';
import { connect, type NetConnectOpts, type Socket } from 'node:net';
import { join } from 'node:path';
import test, { before } from 'node:test';
import OpenAI from 'openai';
import { request } from 'undici';
import { LINGER_BYTES } from '../../src/http/lingering-close.ts';
import { loadScaled } from '../support/load-scaled.ts';
import { ensureBundle, startServe, tempDir, type Cleanups } from '../support/process.ts';

before(ensureBundle);

const LIMIT = 512 * 1024;
/** Ten times the limit. */
const BODY = 10 * LIMIT;
const TRIES = 8;

/**
 * Only the limits here, and the timeouts far away: nothing but lingering's own bounds may end a connection. `extra`:
 * more of svc's environment.
 */
function serve(t: Cleanups, extra: Record<string, string> = {}) {
  const dataDir = tempDir(t);
  const env = {
    SVC_GATEWAY_BODY_LIMIT_BYTES: String(LIMIT),
    SVC_API_BODY_LIMIT_BYTES: String(LIMIT),
    SVC_REQUEST_TIMEOUT_MS: '600000',
    SVC_IDLE_TIMEOUT_MS: '600000',
    ...extra,
  };
  return startServe(t, dataDir, env).then((svc) => ({ svc, port: Number(new URL(svc.address).port), socketPath: join(dataDir, 'svc.sock') }));
}

interface Sent {
  /** All the client read before the connection ended. */
  answer: string;
  /** The error the client's socket ended with, if any. */
  error: string | null;
}

/**
 * Send `request` (`PUT /path`) with a body of `declared` bytes (Content-Length), written as fast as the socket takes it, or, with
 * `pieceEveryMs`, a KiB at a time; never more than declared, and forever when `declared` is past what can be sent.
 */
function sendBody(socket: Socket, request: string, declared: number, pieceEveryMs?: number): Promise<Sent> {
  return new Promise((resolve) => {
    let answer = '';
    let error: string | null = null;
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString('latin1')));
    socket.on('error', (failure: NodeJS.ErrnoException) => (error = failure.code ?? failure.message));
    socket.on('close', () => resolve({ answer, error }));
    socket.write(`${request} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${declared}\r\n\r\n`);
    const piece = Buffer.alloc(pieceEveryMs === undefined ? 64 * 1024 : 1024, ' ');
    let sent = 0;
    const more = (): void => {
      while (!socket.destroyed && !socket.writableEnded && sent < declared) {
        const next = piece.subarray(0, Math.min(piece.length, declared - sent));
        sent += next.length;
        if (pieceEveryMs !== undefined) {
          socket.write(next);
          return void setTimeout(more, pieceEveryMs);
        }
        if (!socket.write(next)) return void socket.once('drain', more);
      }
    };
    more();
  });
}

/** The 413 of `Sent`, whole: its status line and its body's code, or what came instead. */
function outcome({ answer, error }: Sent): string {
  if (/^HTTP\/1\.1 413 /.test(answer) && answer.includes('"payload_too_large"')) return '413 payload_too_large';
  return `${answer.split('\r\n', 1)[0] || 'no answer'} (${error ?? 'closed'})`;
}

test('a body ten times the limit gets its 413 to the client every time: a raw socket on TCP and the local socket, undici, the openai SDK', async (t) => {
  const { svc, port, socketPath } = await serve(t);
  const outcomes: Record<string, string[]> = { tcp: [], local: [], undici: [], sdk: [] };
  const openai = new OpenAI({ baseURL: `${svc.address}/v1`, apiKey: 'unused', maxRetries: 0 });
  for (let i = 0; i < TRIES; i++) {
    outcomes.tcp!.push(outcome(await sendBody(connect(port, '127.0.0.1'), 'POST /v1/chat/completions', BODY)));
    outcomes.local!.push(outcome(await sendBody(connect(socketPath), 'PUT /api/v1/settings', BODY)));
    try {
      const response = await request(`${svc.address}/api/v1/settings`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: Buffer.alloc(BODY, ' '),
      });
      const body = (await response.body.json()) as { error?: { code?: string } };
      outcomes.undici!.push(`${response.statusCode} ${body.error?.code}`);
    } catch (error) {
      outcomes.undici!.push(String((error as NodeJS.ErrnoException).code ?? error));
    }
    try {
      await openai.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: ' '.repeat(BODY) }] });
      outcomes.sdk!.push('answered');
    } catch (error) {
      outcomes.sdk!.push(error instanceof OpenAI.APIError && error.status !== undefined ? `${error.status} ${error.code}` : (error as Error).constructor.name);
    }
  }
  const every = (answer: string) => Array<string>(TRIES).fill(answer);
  assert.deepEqual(outcomes, {
    tcp: every('413 payload_too_large'),
    local: every('413 payload_too_large'),
    undici: every('413 payload_too_large'),
    sdk: every('413 payload_too_large'),
  });
});

// Declared far past what these tests send, by a client that goes on sending after svc's FIN (node's own socket
// ends its side on the peer's unless half-open): only svc ends these connections.
const ENDLESS = 1024 ** 4;
const halfOpen = { allowHalfOpen: true };

test('a client that goes on sending after its 413 is cut: as fast as it can, on TCP and the local socket', async (t) => {
  const { port, socketPath } = await serve(t);
  const [tcp, local] = await Promise.all([
    sendBody(connect({ port, host: '127.0.0.1', ...halfOpen }), 'POST /v1/chat/completions', ENDLESS),
    sendBody(connect({ path: socketPath, ...halfOpen }), 'PUT /api/v1/settings', ENDLESS),
  ]);
  // Ended by svc (the test would time out otherwise), after the client had read its answer.
  assert.deepEqual([outcome(tcp), outcome(local)], ['413 payload_too_large', '413 payload_too_large']);
});

test('a client that goes on sending after its 413 is cut: a trickle of a KiB every 20 ms', async (t) => {
  const { port } = await serve(t);
  // Far under the bytes bound: only the time bound can end it (the request and idle timeouts are ten minutes away).
  const trickle = await sendBody(connect({ port, host: '127.0.0.1', ...halfOpen }), 'POST /v1/chat/completions', ENDLESS, 20);
  assert.equal(outcome(trickle), '413 payload_too_large');
});

/**
 * Send `head` and then a body of up to `LINGER_BYTES` (pieces of 64 KiB, chunk-framed when `chunked`), as fast as the
 * socket takes it, reading nothing until all of it has gone to the kernel, as a client that sends its whole request
 * before it reads (Python's http.client, a blocking `sendall`) does; then read until svc closes the connection.
 */
function sendAllThenRead(options: NetConnectOpts, head: string, chunked: boolean): Promise<Sent> {
  return new Promise((resolve) => {
    const socket = connect(options);
    socket.pause();
    let answer = '';
    let error: string | null = null;
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString('latin1')));
    socket.on('error', (failure: NodeJS.ErrnoException) => (error = failure.code ?? failure.message));
    // Generous: the connection ends within lingering's 2 s.
    const deadline = setTimeout(() => socket.destroy(new Error('not closed by svc')), loadScaled(15_000));
    socket.on('close', () => {
      clearTimeout(deadline);
      resolve({ answer, error });
    });
    socket.write(head);
    const blanks = Buffer.alloc(64 * 1024, ' ');
    const piece = chunked ? Buffer.concat([Buffer.from(`${blanks.length.toString(16)}\r\n`), blanks, Buffer.from('\r\n')]) : blanks;
    // No more than LINGER_BYTES on the wire, framing and all: within the bound, whatever svc read before answering.
    let left = Math.floor(LINGER_BYTES / piece.length);
    const more = (): void => {
      while (!socket.destroyed && left > 0) {
        left -= 1;
        // The last piece's callback: all of the body is the kernel's.
        if (left === 0) return void socket.write(piece, () => socket.resume());
        if (!socket.write(piece)) return void socket.once('drain', more);
      }
    };
    more();
  });
}

/** The status and error code of the answer in `Sent`, whole, or what came instead. */
function answered({ answer, error }: Sent): string {
  const code = /"code":"([a-z_]+)"/.exec(answer)?.[1];
  const status = /^HTTP\/1\.1 (\d{3}) /.exec(answer)?.[1];
  return status && code && answer.endsWith('}') ? `${status} ${code}` : `${answer.split('\r\n', 1)[0] || 'no answer'} (${error ?? 'closed'})`;
}

test('a client that sends a body as long as the lingering bound before reading gets its answer: 401 and 413, declared and chunked, on TCP and the local socket', async (t) => {
  const key = 'sk-lingering-close-0123456789abcdef';
  const { port, socketPath } = await serve(t, { SVC_API_KEY: key });
  const tcp = { port, host: '127.0.0.1' };
  const local = { path: socketPath };
  const head = (request: string, headers: string) => `${request} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n${headers}\r\n`;
  const declared = `Content-Length: ${LINGER_BYTES}\r\n`;
  const chunked = 'Transfer-Encoding: chunked\r\n';
  const bearer = `Authorization: Bearer ${key}\r\n`;
  // A body that outruns its answer (written at once behind the headers) had node stop reading the socket, the body
  // unread, and the linger read nothing more: the client's writes stalled, and the cut at 2 s reset the connection,
  // the answer still unread in the client's buffer lost.
  const cases = {
    'tcp 401 declared': [tcp, head('POST /v1/chat/completions', declared), false],
    'tcp 401 chunked': [tcp, head('POST /v1/chat/completions', chunked), true],
    'tcp 413 declared': [tcp, head('PUT /api/v1/settings', bearer + declared), false],
    'local 413 declared': [local, head('PUT /api/v1/settings', declared), false],
  } as const;
  const outcomes: Record<string, string[]> = {};
  const expected: Record<string, string[]> = {};
  for (const [name, [options, request, isChunked]] of Object.entries(cases)) {
    outcomes[name] = [];
    for (let i = 0; i < TRIES; i++) outcomes[name].push(answered(await sendAllThenRead(options, request, isChunked)));
    expected[name] = Array<string>(TRIES).fill(name.includes('401') ? '401 invalid_api_key' : '413 payload_too_large');
  }
  assert.deepEqual(outcomes, expected);
});

/** A raw request for the local socket (the operator, no credential needed): `PUT /api/v1/settings` of one key. */
function putSetting(key: string, value: unknown): string {
  const body = JSON.stringify({ key, value });
  return `PUT /api/v1/settings HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

/**
 * On a new connection, the headers of a `PUT` declaring a body just over the limit, then `rest`: with the headers
 * when `afterAnswer` is false, else once the answer's head has come. Resolves with all the client read.
 */
function refusedThen(socketPath: string, rest: string, afterAnswer: boolean): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(socketPath);
    let answer = '';
    let pending: string | null = afterAnswer ? rest : null;
    socket.on('data', (chunk: Buffer) => {
      answer += chunk.toString('latin1');
      if (pending !== null && answer.includes('\r\n\r\n')) {
        socket.write(pending);
        pending = null;
      }
    });
    socket.on('error', () => {});
    socket.on('close', () => resolve(answer));
    const head = `PUT /api/v1/settings HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${LIMIT + 1}\r\n\r\n`;
    socket.write(afterAnswer ? head : head + rest);
  });
}

/** The settings, read on a connection of their own. */
function readSettings(socketPath: string): Promise<{ retention_days?: number }> {
  return new Promise((resolve, reject) => {
    const socket = connect(socketPath);
    let answer = '';
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString()));
    socket.on('error', reject);
    socket.on('close', () => resolve((JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) as { settings: { retention_days?: number } }).settings));
    socket.end('GET /api/v1/settings HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n');
  });
}

test('a request pipelined behind a refused body is not run while the connection lingers: sent after the 413, or with the body', async (t) => {
  const { socketPath } = await serve(t);
  // The refused request's whole declared body, then a complete request that writes.
  const rest = (retentionDays: number) => ' '.repeat(LIMIT + 1) + putSetting('retention_days', retentionDays);
  const outcomes = [];
  for (const [retentionDays, afterAnswer] of [[7, true], [9, false]] as const) {
    const answer = await refusedThen(socketPath, rest(retentionDays), afterAnswer);
    // Every status line the client read, whether the 413 was whole, and whether the request behind it ran.
    outcomes.push([answer.match(/^HTTP\/1\.1 \d+/gm), answer.includes('"payload_too_large"'), (await readSettings(socketPath)).retention_days]);
  }
  assert.deepEqual(outcomes, [
    [['HTTP/1.1 413'], true, 30],
    [['HTTP/1.1 413'], true, 30],
  ]);
});
