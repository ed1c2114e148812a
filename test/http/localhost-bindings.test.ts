/**
 * `svc serve --host localhost` on a machine where `localhost` names both loopbacks (127.0.0.1 and ::1, as most
 * /etc/hosts do): fastify's listen() binds such a host's other addresses on servers of its own, plain node servers
 * without svc's protections (pipelined requests behind a closing answer, node's own refusals, draining). Each address
 * svc listens on must be served as the first. The resolver is made to answer as such a machine's would (this one's
 * /etc/hosts may name 127.0.0.1 alone); the requests are real, on raw sockets to each address.
 */
import assert from 'node:assert/strict';
import dns from 'node:dns';
import { syncBuiltinESMExports } from 'node:module';
import { before, describe, test } from 'node:test';
import { loadConfig } from '../../src/config.ts';
import { startServer, type RunningServer } from '../../src/server.ts';
import { completion, sendJson, startFakeUpstream } from '../support/fake-upstream.ts';
import { suiteCleanups, tempDir } from '../support/process.ts';
import { exchangeText } from '../support/raw-http.ts';

const LOOPBACKS = [
  { address: '127.0.0.1', family: 4 },
  { address: '::1', family: 6 },
];

/** `dns.lookup` answering `localhost` with both loopbacks, every other name as before. */
function resolveLocalhostToBothLoopbacks(): () => void {
  const lookup = dns.lookup;
  dns.lookup = ((hostname: string, options: unknown, callback?: unknown) => {
    const done = (typeof options === 'function' ? options : callback) as (...args: unknown[]) => void;
    if (hostname !== 'localhost') return (lookup as (...args: unknown[]) => void)(hostname, options, callback);
    const all = typeof options === 'object' && options !== null && (options as dns.LookupOptions).all === true;
    process.nextTick(() => (all ? done(null, LOOPBACKS) : done(null, LOOPBACKS[0]!.address, LOOPBACKS[0]!.family)));
  }) as typeof dns.lookup;
  syncBuiltinESMExports();
  return () => {
    dns.lookup = lookup;
    syncBuiltinESMExports();
  };
}

const LIMIT = 1024;

function chat(content: string, headers = ''): string {
  const body = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }] });
  return `POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer sk-local-dev\r\n${headers}Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

describe('svc serve --host localhost, localhost naming both loopbacks', () => {
  const t = suiteCleanups();
  let server: RunningServer;
  let port = 0;
  let upstreamCalls = () => 0;

  before(async () => {
    t.after(resolveLocalhostToBothLoopbacks());
    const upstream = await startFakeUpstream(t, (_request, res) => sendJson(res, 200, completion('answered')));
    upstreamCalls = () => upstream.requests.length;
    const env = {
      SVC_LOG_LEVEL: 'silent',
      SVC_HOST: 'localhost',
      SVC_PORT: '0',
      SVC_GATEWAY_BODY_LIMIT_BYTES: String(LIMIT),
      CHATCOMP_API_KEY: 'sk-upstream-0000',
      CHATCOMP_BASE_URL: upstream.baseUrl,
    };
    server = await startServer(loadConfig(env, { dataDir: tempDir(t) }));
    t.after(() => server.close());
    port = Number(new URL(server.address).port);
  });

  for (const { address: host } of LOOPBACKS) {
    test(`on ${host}: a chat completion is answered, and one pipelined behind a 413 never reaches the upstream`, async () => {
      const answered = await exchangeText({ host, port }, chat('hello', 'Connection: close\r\n'));
      assert.match(answered, /^HTTP\/1\.1 200 /);
      const callsBefore = upstreamCalls();
      const tooLarge = chat('x'.repeat(LIMIT));
      const text = await exchangeText({ host, port }, tooLarge + chat('behind'));
      assert.deepEqual([text.match(/HTTP\/1\.1 \d{3}/g), upstreamCalls() - callsBefore], [['HTTP/1.1 413'], 0]);
    });

    test(`on ${host}: a CONNECT gets svc's 405 in its error shape, not a connection closed without a word`, async () => {
      const text = await exchangeText({ host, port }, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n');
      assert.match(text, /^HTTP\/1\.1 405 /);
      assert.match(text, /"method_not_allowed"/);
    });
  }
});
