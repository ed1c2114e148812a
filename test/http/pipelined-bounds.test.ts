/**
 * A client pipelining a burst of small requests behind a slow answer holds a bounded part of svc's memory: svc stops
 * reading a connection while a request on it waits its turn (src/http/pipelined-turns.ts). Before, node parsed the
 * whole burst as it arrived and svc held every request (its IncomingMessage, ServerResponse and listeners) until its
 * turn: 50,000 `GET /health` in 1.6 MB behind one chat completion were 50,000 requests held at once.
 */
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import test from 'node:test';
import { build } from '../support/build.ts';
import { completion, sendJson, startFakeUpstream } from '../support/fake-upstream.ts';

const BURST = 10_000;
const HEALTH = 'GET /health HTTP/1.1\r\nHost: a\r\n\r\n';
/** What one read of a connection holds (node's HTTP parser reads 64 KiB at a time): the requests parsed before a pause. */
const ONE_READ = Math.ceil(65_536 / HEALTH.length);

test('a burst of requests pipelined behind a slow answer is not all received at once', async (t) => {
  let release = () => {};
  const released = new Promise<void>((resolve) => (release = resolve));
  const upstream = await startFakeUpstream(t, async (_request, res) => {
    await released;
    sendJson(res, 200, completion('slow'));
  });
  const { app } = await build(t, { env: { CHATCOMP_API_KEY: 'sk-upstream', CHATCOMP_BASE_URL: upstream.baseUrl } });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const port = (app.server.address() as { port: number }).port;

  // Requests received and not yet answered; the most at once. The slow answer is released once svc has either received
  // the whole burst or stopped reading (its connection paused, and what that read held parsed).
  let held = 0;
  let mostHeld = 0;
  let received = 0;
  app.server.on('request', (_request, response) => {
    received++;
    mostHeld = Math.max(mostHeld, ++held);
    response.once('close', () => held--);
    if (received === BURST + 1) release();
  });
  app.server.once('connection', (socket: Socket) => socket.once('pause', () => setImmediate(release)));

  const body = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'slow' }] });
  const chat = `POST /v1/chat/completions HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
  const client = connect(port, '127.0.0.1');
  t.after(() => client.destroy());
  const answers = await new Promise<number>((resolve, reject) => {
    let count = 0;
    let text = '';
    client.on('data', (chunk) => {
      text += chunk.toString('latin1');
      const last = text.lastIndexOf('HTTP/1.1 ');
      count += text.slice(0, last).match(/HTTP\/1\.1 200 /g)?.length ?? 0;
      text = text.slice(last);
      if (text.endsWith('}') && text.startsWith('HTTP/1.1 200 ')) count += (text = '', 1);
      if (count === BURST + 1) resolve(count);
    });
    client.on('error', reject);
    client.on('close', () => resolve(count));
    client.write(chat + HEALTH.repeat(BURST));
  });
  assert.equal(answers, BURST + 1, 'every request answered, in turn');
  assert.ok(mostHeld <= ONE_READ + 2, `${mostHeld} requests held at once, more than one read's ${ONE_READ}`);
});
