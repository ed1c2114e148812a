/**
 * svc serves no protocol upgrade (no WebSocket, no h2c). A request asking for one (`Upgrade: h2c` with `Connection:
 * Upgrade`, as `curl --http2` sends over http://) is served as plain HTTP/1.1, its body and any request pipelined
 * behind it included, on TCP and the local socket: node hands a request with an Upgrade header, and the rest of its packet, to the server's
 * 'upgrade' event, and with nobody listening its body was lost (a 408 after SVC_REQUEST_TIMEOUT_MS) and the request
 * behind it never answered. On a real listening server: `inject` does not parse HTTP.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { join } from 'node:path';
import test, { before } from 'node:test';
import { build } from '../support/build.ts';
import { loadScaled } from '../support/load-scaled.ts';
import { ensureBundle, startServe, tempDir } from '../support/process.ts';
import { exchangeText } from '../support/raw-http.ts';

before(ensureBundle);

const BOOT = 'bootstrap-token-upgrade-test-01';
const CHAT = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
const UPGRADE = 'Upgrade: h2c\r\nConnection: Upgrade, HTTP2-Settings\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n';

async function listening(t: test.TestContext): Promise<number> {
  // A short request timeout: a body that was lost is a 408 soon, not after two minutes.
  const { app } = await build(t, { env: { SVC_API_KEY: BOOT, SVC_REQUEST_TIMEOUT_MS: '2000', SVC_HEADERS_TIMEOUT_MS: '2000' } });
  await app.listen({ port: 0, host: '127.0.0.1' });
  return (app.server.address() as { port: number }).port;
}

/** The status lines of the answers in `text`, in order. */
function statuses(text: string): string[] {
  return text.match(/HTTP\/1\.1 \d{3}/g) ?? [];
}

/** `exchangeText`, or 'no end' when the server has not closed the connection within a generous deadline. */
function exchangeWithin(port: number, bytes: string): Promise<string> {
  return Promise.race([exchangeText(port, bytes), new Promise<string>((resolve) => setTimeout(() => resolve('no end'), loadScaled(20_000)).unref())]);
}

test('a request asking to upgrade to h2c is served as HTTP/1.1 with its body, and a request pipelined behind it too', async (t) => {
  const port = await listening(t);
  const post =
    `POST /v1/chat/completions HTTP/1.1\r\nHost: svc\r\nAuthorization: Bearer ${BOOT}\r\n${UPGRADE}` +
    `Content-Type: application/json\r\nContent-Length: ${CHAT.length}\r\n\r\n${CHAT}`;
  const behind = 'GET /health HTTP/1.1\r\nHost: svc\r\nConnection: close\r\n\r\n';
  const text = await exchangeWithin(port, post + behind);
  assert.deepEqual(statuses(text), ['HTTP/1.1 200', 'HTTP/1.1 200'], text);
  assert.match(text, /"object":"chat\.completion"/);
  assert.doesNotMatch(text, /101 Switching/);
});

test('a bodiless request asking to upgrade is served as HTTP/1.1, and a request pipelined behind it too', async (t) => {
  const port = await listening(t);
  const behind = 'GET /health HTTP/1.1\r\nHost: svc\r\nConnection: close\r\n\r\n';
  const text = await exchangeWithin(port, `GET /health HTTP/1.1\r\nHost: svc\r\n${UPGRADE}\r\n${behind}`);
  assert.deepEqual(statuses(text), ['HTTP/1.1 200', 'HTTP/1.1 200'], text);
});

test('on the local socket too, a request asking to upgrade is served as HTTP/1.1 with a request pipelined behind it', async (t) => {
  const dataDir = tempDir(t);
  await startServe(t, dataDir);
  const socket = connect(join(dataDir, 'svc.sock'));
  const answered = new Promise<string>((resolve) => {
    let text = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => (text += chunk));
    socket.on('error', () => undefined);
    socket.on('close', () => resolve(text));
  });
  const deadline = setTimeout(() => socket.destroy(), loadScaled(20_000));
  t.after(() => clearTimeout(deadline));
  socket.write(`GET /health HTTP/1.1\r\nHost: svc\r\n${UPGRADE}\r\nGET /health HTTP/1.1\r\nHost: svc\r\nConnection: close\r\n\r\n`);
  assert.deepEqual(statuses(await answered), ['HTTP/1.1 200', 'HTTP/1.1 200']);
});
