/**
 * Every answer svc sends carries `X-Content-Type-Options: nosniff` (docs/api.md, "Response headers"), whoever writes
 * it: fastify's reply (JSON answers and errors of every surface, the pages), the gateway's SSE writer (a hijacked
 * reply), the router's own errors (`frameworkErrors`, before any hook) and the raw answers of the HTTP layer
 * (src/http/client-errors.ts). A browser that sniffed a JSON body or a stream holding a caller's text as HTML would run
 * it in svc's origin.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import type { InjectOptions } from 'fastify';
import { build } from '../support/build.ts';
import { exchange } from '../support/raw-http.ts';

const CHAT = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: '<script>alert(1)</script>' }] };

test('answers through fastify carry nosniff: JSON, errors, SSE, preflights, pages and assets', async (t) => {
  const { app } = await build(t);
  const answers: Record<string, InjectOptions> = {
    'health': { method: 'GET', url: '/health' },
    'api success': { method: 'GET', url: '/api/v1/keys' },
    'api error': { method: 'POST', url: '/api/v1/keys', payload: '{', headers: { 'content-type': 'application/json' } },
    'unknown route': { method: 'GET', url: '/nowhere' },
    'chat answer': { method: 'POST', url: '/v1/chat/completions', payload: CHAT },
    'chat stream': { method: 'POST', url: '/v1/chat/completions', payload: { ...CHAT, stream: true } },
    'messages stream': {
      method: 'POST',
      url: '/v1/messages',
      payload: { model: 'claude-sonnet-4-5', max_tokens: 16, stream: true, messages: CHAT.messages },
    },
    'chat error': { method: 'POST', url: '/v1/chat/completions', payload: { model: 'gpt-4o-mini' } },
    'router error': { method: 'GET', url: '/v1/models/%zz' },
    'preflight': {
      method: 'OPTIONS',
      url: '/v1/chat/completions',
      headers: { origin: 'https://app.example', 'access-control-request-method': 'POST' },
    },
    'page': { method: 'GET', url: '/accept-invite?token=abc' },
    'asset': { method: 'GET', url: '/assets/pages/common.js' },
  };
  for (const [kind, request] of Object.entries(answers)) {
    const response = await app.inject(request);
    assert.equal(response.headers['x-content-type-options'], 'nosniff', `${kind}: ${response.statusCode} ${response.headers['content-type']}`);
  }
  // The kinds above are the ones meant: a stream answered as a stream, an error as an error.
  const stream = await app.inject({ method: 'POST', url: '/v1/chat/completions', payload: { ...CHAT, stream: true } });
  assert.match(String(stream.headers['content-type']), /^text\/event-stream/);
  const routerError = await app.inject({ method: 'GET', url: '/v1/models/%zz' });
  assert.equal(routerError.statusCode, 400);
});

test('the raw answers of the HTTP layer carry nosniff: a parser error, an unmet Expect, a CONNECT', async (t) => {
  const { app } = await build(t);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const port = (app.server.address() as { port: number }).port;
  const raw = {
    'parser error': 'GET /v1/models HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n',
    'unmet Expect': 'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\nContent-Length: 2\r\n\r\n{}',
    'CONNECT': 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n',
  };
  for (const [kind, bytes] of Object.entries(raw)) {
    const answer = await exchange(port, bytes);
    assert.ok(answer.status >= 400, `${kind}: ${answer.headers}`);
    assert.match(answer.headers, /\r\nx-content-type-options: nosniff\r\n/i, `${kind}: ${answer.headers}`);
  }
});
