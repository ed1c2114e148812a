/** Failed authentications are throttled per client address, before any credential is checked. */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import test from 'node:test';
import { Agent, request } from 'undici';
import { bearer, build, json } from '../support/build.ts';
import { tempDir } from '../support/process.ts';
import { loadConfig } from '../../src/config.ts';
import { startServer } from '../../src/server.ts';
import { createAuthFailureLimiter } from '../../src/http/auth-failures.ts';

test('after too many failed authentications an address gets 429 with retry-after, even with a good token', async (t) => {
  const { app } = await build(t, { env: { SVC_API_KEY: 'bootstrap-token-brute-force-01', SVC_AUTH_FAILURES_PER_MINUTE: '3' } });
  for (let i = 0; i < 3; i++) {
    const wrong = await app.inject({ url: '/api/v1/keys', headers: bearer(`guess-${i}`) });
    assert.equal(wrong.statusCode, 401);
  }
  const blocked = await app.inject({ url: '/api/v1/keys', headers: bearer('bootstrap-token-brute-force-01') });
  assert.equal(blocked.statusCode, 429);
  assert.ok(Number(blocked.headers['retry-after']) >= 1);
  assert.equal(json(blocked).error.code, 'rate_limited');
  const gateway = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: bearer('guess'), payload: {} });
  assert.equal(gateway.statusCode, 429);
  assert.equal(json(gateway).error.type, 'rate_limit_error');
  // Another address is unaffected.
  const other = await app.inject({ url: '/api/v1/keys', headers: bearer('bootstrap-token-brute-force-01'), remoteAddress: '10.9.8.7' });
  assert.equal(other.statusCode, 200);
});

test('requests without a credential, or with a stale session cookie, are plain 401s that never lock an address out', async (t) => {
  const { app } = await build(t, { env: { SVC_API_KEY: 'bootstrap-token-brute-force-02', SVC_AUTH_FAILURES_PER_MINUTE: '3' } });
  for (let i = 0; i < 10; i++) {
    assert.equal((await app.inject({ url: '/api/v1/auth/me' })).statusCode, 401);
    assert.equal((await app.inject({ url: '/api/v1/keys', headers: { cookie: `svc_session=${'x'.repeat(43)}` } })).statusCode, 401);
  }
  assert.equal((await app.inject({ url: '/api/v1/keys', headers: bearer('bootstrap-token-brute-force-02') })).statusCode, 200);
});

test('a wrong token on a public route counts as a guess: what it answers must not let the bootstrap token be tried past the limit', async (t) => {
  const token = 'bootstrap-token-brute-force-07';
  const { app } = await build(t, { env: { SVC_API_KEY: token, SVC_AUTH_FAILURES_PER_MINUTE: '3' } });
  // Logout, a public route, answers a wrong token as no credential (200) and the bootstrap token's X-Svc-Tenant naming
  // no organization as 404: an oracle, so its guesses count like any other route's.
  const guess = (value: string) =>
    app.inject({ method: 'POST', url: '/api/v1/auth/logout', headers: { ...bearer(value), 'x-svc-tenant': 'no-such-org' } });
  for (let i = 0; i < 3; i++) assert.equal((await guess(`guess-${i}`)).statusCode, 200);
  const right = await guess(token);
  assert.equal(right.statusCode, 429);
  assert.equal(json(right).error.code, 'rate_limited');
  assert.equal((await app.inject({ method: 'POST', url: '/api/v1/auth/login', headers: bearer(token), payload: { email: 'a@example.com', password: 'x' } })).statusCode, 429);
});

test('an IPv6 client is one address per /64: rotating through its addresses does not get past the limit', async (t) => {
  const { app } = await build(t, { env: { SVC_API_KEY: 'bootstrap-token-brute-force-03', SVC_AUTH_FAILURES_PER_MINUTE: '3' } });
  for (let i = 1; i <= 3; i++) {
    const wrong = await app.inject({ url: '/api/v1/keys', headers: bearer(`guess-${i}`), remoteAddress: `2001:db8:aa:bb::${i}` });
    assert.equal(wrong.statusCode, 401);
  }
  const rotated = await app.inject({ url: '/api/v1/keys', headers: bearer('bootstrap-token-brute-force-03'), remoteAddress: '2001:db8:aa:bb:ffff:1:2:3' });
  assert.equal(rotated.statusCode, 429);
  // The next /64 is another client.
  const neighbour = await app.inject({ url: '/api/v1/keys', headers: bearer('bootstrap-token-brute-force-03'), remoteAddress: '2001:db8:aa:bc::1' });
  assert.equal(neighbour.statusCode, 200);
});

test('behind a trusted proxy that writes the client port into X-Forwarded-For, the client is one address whatever its port', async (t) => {
  const token = 'bootstrap-token-brute-force-04';
  const { app } = await build(t, { env: { SVC_API_KEY: token, SVC_AUTH_FAILURES_PER_MINUTE: '3', SVC_TRUST_PROXY_HEADERS: 'true', SVC_TRUSTED_PROXY_CIDRS: '127.0.0.1' } });
  for (const [i, forwarded] of ['198.51.100.7:20001', '198.51.100.7:20002', '198.51.100.7:20003'].entries()) {
    const wrong = await app.inject({ url: '/api/v1/keys', headers: { ...bearer(`guess-${i}`), 'x-forwarded-for': forwarded }, remoteAddress: '127.0.0.1' });
    assert.equal(wrong.statusCode, 401);
  }
  const again = await app.inject({ url: '/api/v1/keys', headers: { ...bearer(token), 'x-forwarded-for': '198.51.100.7:20004' }, remoteAddress: '127.0.0.1' });
  assert.equal(again.statusCode, 429);
  const v6 = await app.inject({ url: '/api/v1/keys', headers: { ...bearer(token), 'x-forwarded-for': '[2001:db8::1]:443' }, remoteAddress: '127.0.0.1' });
  assert.equal(v6.statusCode, 200);
  // Spellings that are no IP address count as the proxy, one address: they cannot be rotated past the limit.
  for (const [i, forwarded] of ['0198.51.100.7', 'unknown', '0xc6336407'].entries()) {
    const wrong = await app.inject({ url: '/api/v1/keys', headers: { ...bearer(`spelled-${i}`), 'x-forwarded-for': forwarded }, remoteAddress: '127.0.0.1' });
    assert.equal(wrong.statusCode, 401);
  }
  const respelled = await app.inject({ url: '/api/v1/keys', headers: { ...bearer(token), 'x-forwarded-for': '198.51.100.07' }, remoteAddress: '127.0.0.1' });
  assert.equal(respelled.statusCode, 429);
  assert.equal((await app.inject({ url: '/api/v1/keys', headers: bearer(token), remoteAddress: '127.0.0.1' })).statusCode, 429);
});

test('behind a trusted proxy, an IPv4 host behind 6to4 or Teredo addresses is one address: rotating its /64s does not get past the limit', async (t) => {
  const token = 'bootstrap-token-brute-force-08';
  const { app } = await build(t, { env: { SVC_API_KEY: token, SVC_AUTH_FAILURES_PER_MINUTE: '3', SVC_TRUST_PROXY_HEADERS: 'true', SVC_TRUSTED_PROXY_CIDRS: '127.0.0.1' } });
  const from = (forwarded: string, credential: string) =>
    app.inject({ url: '/api/v1/keys', headers: { ...bearer(credential), 'x-forwarded-for': forwarded }, remoteAddress: '127.0.0.1' });
  // 198.51.100.7's 6to4 block is 2002:c633:6407::/48; each guess comes from another /64 of it.
  for (const [i, forwarded] of ['2002:c633:6407:1::1', '2002:c633:6407:2::1', '2002:c633:6407:ffff::9'].entries()) {
    assert.equal((await from(forwarded, `guess-${i}`)).statusCode, 401);
  }
  assert.equal((await from('2002:c633:6407:3::7', token)).statusCode, 429);
  // The same host over IPv4 and over Teredo (its address inverted in the last 32 bits) is out of guesses too.
  assert.equal((await from('198.51.100.7', token)).statusCode, 429);
  assert.equal((await from('2001:0:4136:e378:8000:63bf:39cc:9bf8', token)).statusCode, 429);
  // Another IPv4 host's 6to4 block is another client.
  assert.equal((await from('2002:c633:6408:1::1', token)).statusCode, 200);
});

test('guesses pipelined on one connection count while they are checked: one packet of them gets no more checks than the limit', async (t) => {
  const token = 'bootstrap-token-brute-force-05';
  const { app } = await build(t, { env: { SVC_API_KEY: token, SVC_AUTH_FAILURES_PER_MINUTE: '3' } });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const port = (app.server.address() as { port: number }).port;
  // Twenty wrong guesses and the right token last, in one write: node hands svc all of them before any check ends.
  const guesses = [...Array.from({ length: 20 }, (_, i) => `guess-${i}`), token];
  const requests = guesses.map((guess, i) => `GET /api/v1/keys HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${guess}\r\n${i === guesses.length - 1 ? 'Connection: close\r\n' : ''}\r\n`);
  const answers = await new Promise<string>((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(requests.join('')));
    let text = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => (text += chunk));
    socket.on('error', reject);
    socket.on('close', () => resolve(text));
  });
  const statuses = [...answers.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((match) => Number(match[1]));
  assert.equal(statuses.length, guesses.length);
  assert.deepEqual(statuses.slice(0, 3), [401, 401, 401]);
  // The rest were refused before their token was looked at, the right one included.
  assert.deepEqual(new Set(statuses.slice(3)), new Set([429]));
  assert.equal((answers.match(/\r\nretry-after: \d+\r\n/gi) ?? []).length, guesses.length - 3);
});

test('a credential being checked counts until its check ends, and a good one then frees its place', () => {
  const limiter = createAuthFailureLimiter(2);
  const now = 1_000_000;
  assert.equal(limiter.begin('198.51.100.1', now), 0);
  assert.equal(limiter.begin('198.51.100.1', now), 0);
  // Two checks under way fill the limit: a third waits a second for them.
  assert.equal(limiter.begin('198.51.100.1', now), 1);
  assert.equal(limiter.retryAfter('198.51.100.2', now), 0);
  limiter.settle('198.51.100.1', false, now);
  limiter.settle('198.51.100.1', false, now);
  assert.equal(limiter.retryAfter('198.51.100.1', now), 0);
  // Failures hold the address until the window that began with the first one ends.
  for (let i = 0; i < 2; i++) {
    assert.equal(limiter.begin('198.51.100.1', now + 1_000), 0);
    limiter.settle('198.51.100.1', true, now + 1_000);
  }
  assert.equal(limiter.begin('198.51.100.1', now + 2_000), 59);
  assert.equal(limiter.retryAfter('198.51.100.1', now + 61_000), 0);
});

test('headers a proxy appends after a thousand of the client\'s still count: the forwarded address and the credential', async (t) => {
  const token = 'bootstrap-token-brute-force-06';
  const { app } = await build(t, { env: { SVC_API_KEY: token, SVC_AUTH_FAILURES_PER_MINUTE: '2', SVC_TRUST_PROXY_HEADERS: 'true', SVC_TRUSTED_PROXY_CIDRS: '127.0.0.1' } });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const port = (app.server.address() as { port: number }).port;
  const padding = Array.from({ length: 1000 }, (_, i) => `x-pad-${i}: ${i}\r\n`).join('');
  /** One request from a client padding it, with what the proxy in front appends last. */
  const status = (first: string, appended: string) =>
    new Promise<number>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => socket.write(`GET /api/v1/keys HTTP/1.1\r\nHost: x\r\n${first}${padding}${appended}Connection: close\r\n\r\n`));
      let text = '';
      socket.setEncoding('latin1');
      socket.on('data', (chunk: string) => (text += chunk));
      socket.on('error', reject);
      socket.on('close', () => resolve(Number(text.split(' ', 2)[1])));
    });
  // The client rotates the address it claims; the proxy's X-Forwarded-For, appended, names the same client each time.
  for (let i = 0; i < 2; i++) {
    assert.equal(await status(`Authorization: Bearer guess-${i}\r\nX-Forwarded-For: 198.51.100.${i}\r\n`, 'X-Forwarded-For: 203.0.113.9\r\n'), 401);
  }
  assert.equal(await status(`Authorization: Bearer ${token}\r\nX-Forwarded-For: 198.51.100.7\r\n`, 'X-Forwarded-For: 203.0.113.9\r\n'), 429);
  // A credential after the padding is not dropped either.
  assert.equal(await status('', `X-Forwarded-For: 203.0.113.10\r\nAuthorization: Bearer ${token}\r\n`), 200);
});

test('a client that resets its connection right after its request is still counted as its own address, never as the local operator', async (t) => {
  const token = 'bootstrap-token-brute-force-09';
  const dataDir = tempDir(t, 'svc-reset-peer-');
  const env = { SVC_LOG_LEVEL: 'silent', SVC_PORT: '0', SVC_HOST: '0.0.0.0', SVC_API_KEY: token, SVC_AUTH_FAILURES_PER_MINUTE: '3' };
  const server = await startServer(loadConfig(env, { dataDir }));
  t.after(() => server.close());
  const port = Number(new URL(server.address).port);
  /** Send a request from `client` and reset the connection once it is written: nobody reads the answer, svc runs it. */
  const sendAndReset = (client: string, head: string, body = '') =>
    new Promise<void>((resolve) => {
      const socket = connect({ port, host: '127.0.0.1', localAddress: client }, () =>
        socket.write(`${head}Host: 127.0.0.1\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`, () => socket.resetAndDestroy()),
      );
      socket.on('error', () => {});
      socket.on('close', () => resolve());
    });
  const local = new Agent({ connect: { socketPath: server.socketPath! } });
  const from = (client: string) => new Agent({ localAddress: client });
  const guesser = from('127.0.0.2');
  const resetter = from('127.0.0.1');
  t.after(() => Promise.all([local.close(), guesser.close(), resetter.close()]));
  const keysBy = async (dispatcher: InstanceType<typeof Agent>, url: string) => {
    const response = await request(url, { dispatcher, headers: bearer(token) });
    await response.body.dump();
    return response.statusCode;
  };

  // Read once the connection was gone, the peer's address was undefined, which is how a request on the local socket
  // looks: such guesses and reset requests were counted as the local operator's, who was locked out, while the address
  // that sent them kept its own attempts. A reset connection may also end a request before it runs: sent until they count.
  let guesserStatus = 0;
  for (let i = 0; i < 20 && guesserStatus !== 429; i++) {
    await sendAndReset('127.0.0.2', `GET /api/v1/keys HTTP/1.1\r\nAuthorization: Bearer guess-${i}\r\n`);
    guesserStatus = await keysBy(guesser, `http://127.0.0.1:${port}/api/v1/keys`);
  }
  assert.equal(guesserStatus, 429, 'the guesses counted against the address that sent them');
  assert.equal(await keysBy(local, 'http://localhost/api/v1/keys'), 200, 'the local operator is not locked out');

  const body = JSON.stringify({ email: 'nobody@example.test' });
  const resetHead = `POST /api/v1/auth/password-reset/request HTTP/1.1\r\nContent-Type: application/json\r\nOrigin: http://127.0.0.1:${port}\r\n`;
  const counted = () => server.services.store.read((sql) => sql.get<{ n: number }>("SELECT COUNT(*) AS n FROM rate_events WHERE bucket = 'passwordReset'")!.n);
  for (let i = 0; i < 50 && (await counted()) < 5; i++) await sendAndReset('127.0.0.1', resetHead, body);
  assert.equal(await counted(), 5);
  const byResetter = await request(`http://127.0.0.1:${port}/api/v1/auth/password-reset/request`, {
    dispatcher: resetter,
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: `http://127.0.0.1:${port}` },
    body,
  });
  assert.equal(byResetter.statusCode, 429, 'the reset requests counted against the address that sent them');
  assert.match(((await byResetter.body.json()) as { error: { message: string } }).error.message, /^Too many attempts/);
});

test('the wall clock stepping back an hour (NTP, a VM resumed) does not hold a locked-out address for that hour', async (t) => {
  const token = 'bootstrap-token-brute-force-10';
  const { app } = await build(t, { env: { SVC_API_KEY: token, SVC_AUTH_FAILURES_PER_MINUTE: '3' } });
  const guess = (value: string, remoteAddress: string) => app.inject({ url: '/api/v1/keys', headers: bearer(value), remoteAddress });
  for (let i = 0; i < 3; i++) assert.equal((await guess(`guess-${i}`, '198.51.100.20')).statusCode, 401);
  const wallNow = Date.now;
  t.mock.method(Date, 'now', () => wallNow() - 3_600_000);
  const blocked = await guess(token, '198.51.100.20');
  assert.equal(blocked.statusCode, 429);
  // The window is a minute of elapsed time, whatever the wall clock says: at most 60 s to wait, not 61 minutes.
  assert.ok(Number(blocked.headers['retry-after']) <= 60, `retry-after ${blocked.headers['retry-after']}`);
  assert.equal(json(blocked).error.code, 'rate_limited');
});
