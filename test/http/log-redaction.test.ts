/** One-time tokens and credentials never reach the request log (docs/accounts.md, docs/configuration.md). */
import assert from 'node:assert/strict';
import test, { before } from 'node:test';
import { redactUrl } from '../../src/http/log-redaction.ts';
import { bearer, build, json, logSink } from '../support/build.ts';
import { ensureBundle, startServe, tempDir } from '../support/process.ts';

before(ensureBundle);

test('token paths and token query parameters are redacted; other URLs are untouched', () => {
  assert.equal(redactUrl('/api/v1/invites/abcDEF_-123/accept'), '/api/v1/invites/[redacted]/accept');
  assert.equal(redactUrl('/api/v1/invites/abc?x=1'), '/api/v1/invites/[redacted]?x=1');
  assert.equal(redactUrl('/api/v1/auth/verify/tok'), '/api/v1/auth/verify/[redacted]');
  assert.equal(redactUrl('/accept-invite?token=secret&next=1'), '/accept-invite?token=[redacted]&next=1');
  assert.equal(redactUrl('/reset-password?a=b&TOKEN=secret'), '/reset-password?a=b&TOKEN=[redacted]');
  assert.equal(redactUrl('/api/v1/runs?limit=5'), '/api/v1/runs?limit=5');
  // A target in absolute form (RFC 9112 3.2.2) is routed by its path, and logged by it.
  assert.equal(redactUrl('http://svc.example/api/v1/invites/abc/accept'), '/api/v1/invites/[redacted]/accept');
  assert.equal(redactUrl('HTTPS://svc.example:8443/api/v1/auth/verify/tok'), '/api/v1/auth/verify/[redacted]');
  assert.equal(redactUrl('http://svc.example?token=secret'), '/?token=[redacted]');
  // Spellings the router does not take (404s) still carry what a client meant as a token: redacted too.
  assert.equal(redactUrl('/api/v1//invites/abc'), '/api/v1//invites/[redacted]');
  assert.equal(redactUrl('//api/v1/auth//verify/tok'), '//api/v1/auth//verify/[redacted]');
  assert.equal(redactUrl('/API/V1/Invites/abc/accept'), '/API/V1/Invites/[redacted]/accept');
  assert.equal(redactUrl('/api/v1/invites%2Fabc'), '/api/v1/invites%2F[redacted]');
  // Letters percent-encoded: the router would decode them; svc refuses such a path with 400 (src/http/percent-encoding.ts),
  // but the refused request's log line is redacted all the same.
  assert.equal(redactUrl('/%61pi/v1/invites/abc'), '/%61pi/v1/invites/[redacted]');
  assert.equal(redactUrl('/api/%761/%69nvites/abc/accept'), '/api/%761/%69nvites/[redacted]/accept');
  assert.equal(redactUrl('/api/v1/auth/%56ERIFY/tok'), '/api/v1/auth/%56ERIFY/[redacted]');
  assert.equal(redactUrl('/api/v1/invitesx/abc'), '/api/v1/invitesx/abc');
});

test('the request log of a real app never contains an invitation token', async (t) => {
  const sink = logSink();
  const { app } = await build(t, { log: sink, overrides: { log: { warn() {} } } });
  const token = 'S3cretT0kenS3cretT0kenS3cretT0kenS3cretT0k';
  await app.inject({ url: `/api/v1/invites/${token}` });
  await app.inject({ url: `/api/v1/auth/verify/${token}` });
  assert.equal((await app.inject({ url: `/%61pi/v1/%69nvites/${token}` })).statusCode, 400);
  const log = sink.text();
  assert.match(log, /\/api\/v1\/invites\/\[redacted\]/);
  assert.ok(!log.includes(token));
});

test('query parameters named like a credential are redacted, whatever their case or percent-encoding; others are untouched', () => {
  assert.equal(redactUrl('/v1/chat/completions?api_key=sk-1&x=1'), '/v1/chat/completions?api_key=[redacted]&x=1');
  assert.equal(redactUrl('/v1/models?key=k&limit=2'), '/v1/models?key=[redacted]&limit=2');
  assert.equal(redactUrl('/v1/models?access_token=a&ACCESS_TOKEN=b'), '/v1/models?access_token=[redacted]&ACCESS_TOKEN=[redacted]');
  assert.equal(redactUrl('/v1/models?apiKey=a&x-api-key=b&client_secret=c'), '/v1/models?apiKey=[redacted]&x-api-key=[redacted]&client_secret=[redacted]');
  assert.equal(redactUrl('/v1/models?password=p&auth=a&authorization=Bearer%20x'), '/v1/models?password=[redacted]&auth=[redacted]&authorization=[redacted]');
  assert.equal(redactUrl('/v1/models?session=s&sig=g&signature=g'), '/v1/models?session=[redacted]&sig=[redacted]&signature=[redacted]');
  // The router decodes a name before it reads it: a name the client percent-encoded is the same name.
  assert.equal(redactUrl('/v1/models?api%5Fkey=sk-1'), '/v1/models?api%5Fkey=[redacted]');
  assert.equal(redactUrl('/v1/models?%6Bey=sk-1&%zz=1'), '/v1/models?%6Bey=[redacted]&%zz=1');
  // An svc key under any name, or under none.
  assert.equal(redactUrl('/v1/models?q=svc_abcdef&svc_ghijkl'), '/v1/models?q=[redacted]&[redacted]');
  assert.equal(redactUrl('/api/v1/runs?limit=5&cursor=abc&status=ok&model=svc/chorus'), '/api/v1/runs?limit=5&cursor=abc&status=ok&model=svc/chorus');
  assert.equal(redactUrl('/api/v1/audit?decision=deny&verify=1&before=x'), '/api/v1/audit?decision=deny&verify=1&before=x');
  // A raw fragment (refused, but logged as sent): none of it, whatever its names.
  assert.equal(redactUrl('/api/v1/runs#access_token=abc'), '/api/v1/runs#[redacted]');
  assert.equal(redactUrl('/api/v1/runs?limit=1#id_token=abc&x=1'), '/api/v1/runs?limit=1#[redacted]');
  assert.equal(redactUrl('/api/v1/runs#x?token=abc'), '/api/v1/runs#[redacted]');
});

test("svc serve's request log holds no credential: not a key sent in the query, nor the Authorization, x-api-key or Cookie headers", async (t) => {
  const server = await startServe(t, tempDir(t), { SVC_LOG_LEVEL: 'info' });
  const secrets = ['Qs3cretApiKey', 'Qs3cretKey', 'Qs3cretAccess', 'Hs3cretBearer', 'Hs3cretXApiKey', 'Hs3cretCookie'];
  const response = await fetch(`${server.address}/v1/chat/completions?api_key=sk-${secrets[0]}&key=${secrets[1]}&access_token=${secrets[2]}&n=1`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      authorization: `Bearer sk-${secrets[3]}`,
      'x-api-key': `sk-${secrets[4]}`,
      cookie: `svc_session=${secrets[5]}`,
    },
    body: '{}',
  });
  await response.arrayBuffer();
  const requestId = response.headers.get('x-request-id')!;
  // The request's lines, once svc has written them (the log is written asynchronously).
  const lines = async (): Promise<string[]> => {
    for (;;) {
      const mine = server.output().split('\n').filter((line) => line.includes(requestId));
      if (mine.some((line) => line.includes('request completed'))) return mine;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };
  const logged = (await lines()).join('\n');
  assert.match(logged, /"url":"\/v1\/chat\/completions\?api_key=\[redacted\]&key=\[redacted\]&access_token=\[redacted\]&n=1"/);
  for (const secret of secrets) assert.ok(!server.output().includes(secret), `${secret} in the log: ${logged}`);
});

test('an svc key anywhere in a URL, a path segment or within a query value, never reaches the request log, nor its start', async (t) => {
  const sink = logSink();
  const { app } = await build(t, { log: sink, overrides: { log: { warn() {} } } });
  const { token } = json<{ token: string }>(await app.inject({ method: 'POST', url: '/api/v1/keys', payload: { name: 'pasted' } }));
  const encoded = token.replace('svc_', 'svc%5F');
  // A key taken for a model id, a base URL with the key in its path, a header's value put in the query, an encoded `_`.
  const urls = [`/v1/models/${token}`, `/${token}/v1/chat/completions`, `/v1/models?q=Bearer%20${token}`, `/v1/models/${encoded}`, `/v1/models?q=x${token}`];
  for (const url of urls) await app.inject({ url, headers: bearer(token) });
  const logged = sink.text().trim().split('\n').map((line) => JSON.parse(line)).filter((line) => line.msg === 'incoming request').map((line) => line.req.url);
  assert.deepEqual(logged.slice(-urls.length), ['/v1/models/[redacted]', '/[redacted]/v1/chat/completions', '/v1/models?q=Bearer%20[redacted]', '/v1/models/[redacted]', '/v1/models?q=x[redacted]']);
  // The first 12 characters: the prefix and 8 of the key's secret part.
  assert.ok(!sink.text().includes(token.slice(0, 12)), sink.text());
  assert.ok(!sink.text().includes(encoded.slice(0, 14)), sink.text());
  // A path that merely holds `svc_` with fewer than 8 characters after it is left as it is.
  assert.equal(redactUrl('/v1/models/my_svc_mini'), '/v1/models/my_svc_mini');
});

test('behind a trusted proxy the request log names the client address the limits count: a forwarded entry that is no IP address is logged as the proxy, the entry labelled', async (t) => {
  const sink = logSink();
  const env = { SVC_TRUST_PROXY_HEADERS: 'true', SVC_TRUSTED_PROXY_CIDRS: '127.0.0.1' };
  const { app } = await build(t, { env, log: sink, overrides: { log: { warn() {} } } });
  const requests: Array<[string, string]> = [['unknown', '/health?n=1'], ['005.5.5.5', '/health?n=2'], ['198.51.100.7', '/health?n=3'], ['198.51.100.7:20001', '/health?n=4']];
  for (const [forwarded, url] of requests) await app.inject({ url, headers: { 'x-forwarded-for': forwarded }, remoteAddress: '127.0.0.1' });
  await app.inject({ url: '/health?n=5', remoteAddress: '127.0.0.1' });
  const lines = sink.text().trim().split('\n').map((line) => JSON.parse(line)).filter((line) => line.msg === 'incoming request');
  const logged = (n: number) => lines.find((line) => line.req.url === `/health?n=${n}`).req;
  // Logged as the client, `unknown` read as an address of its own, which the limits do not count it as.
  assert.equal(logged(1).remoteAddress, '127.0.0.1');
  assert.equal(logged(1).forwardedForNotAnIp, 'unknown');
  assert.equal(logged(2).remoteAddress, '127.0.0.1');
  assert.equal(logged(2).forwardedForNotAnIp, '005.5.5.5');
  // A forwarded IP address is the client, as before; nothing else is added.
  assert.deepEqual(Object.keys(logged(3)).sort(), ['hostname', 'method', 'remoteAddress', 'url']);
  assert.equal(logged(3).remoteAddress, '198.51.100.7');
  assert.equal(logged(4).remoteAddress, '198.51.100.7:20001');
  assert.equal(logged(5).remoteAddress, '127.0.0.1');
});
