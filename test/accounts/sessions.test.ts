/** Sessions (SPEC 4.4, 5.1, 5.2; docs/accounts.md): login, cookie, logout, me, password change, CSRF, login limits. */
import assert from 'node:assert/strict';
import test from 'node:test';
import { createPasswordHasher } from '../../src/accounts/passwords.ts';
import { bearer, json } from '../support/build.ts';
import { ADMIN, BOOT, Browser, buildAccounts, buildWithAdmin, gatedHasher, makeUser, operator, ORIGIN, sessionCookieOf } from '../support/accounts.ts';

test('the bootstrap admin signs in: cookie attributes, me, and the session authenticates the API', async (t) => {
  const { app } = await buildWithAdmin(t);
  const response = await app.inject({ method: 'POST', url: '/api/v1/auth/login', headers: { origin: ORIGIN }, payload: ADMIN });
  assert.equal(response.statusCode, 200);
  const cookie = String(response.headers['set-cookie']);
  assert.match(cookie, /^svc_session=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Lax; Max-Age=2592000$/);
  assert.equal(response.headers['cache-control'], 'no-store');
  const me = json(response);
  assert.equal(me.user.email, ADMIN.email);
  assert.equal(me.user.role, 'admin');
  assert.equal(me.user.emailVerified, true);
  assert.deepEqual(me.org, { id: 'default', name: 'Default', role: 'owner' });
  assert.equal(me.admin, true);
  assert.equal(me.platformAdmin, true);
  assert.equal(me.mustChangePassword, false);
  assert.ok(!response.body.includes('passwordHash') && !response.body.includes('scrypt$'));

  const token = sessionCookieOf(response)!;
  const keys = await app.inject({ url: '/api/v1/keys', headers: { cookie: `svc_session=${token}` } });
  assert.equal(keys.statusCode, 200);
  // Sessions authenticate the management API only, never the gateway wires.
  const chat = await app.inject({
    method: 'POST',
    url: '/v1/chat/completions',
    headers: { cookie: `svc_session=${token}` },
    payload: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] },
  });
  assert.equal(chat.statusCode, 401);
});

test('every login makes a new session token, stored only hashed', async (t) => {
  const { app, services } = await buildWithAdmin(t);
  const a = new Browser(app);
  const b = new Browser(app);
  await a.login(ADMIN.email, ADMIN.password);
  await b.login(ADMIN.email, ADMIN.password);
  assert.notEqual(a.cookie, b.cookie);
  const rows = await services.store.read((sql) => sql.all<{ token_hash: string }>('SELECT token_hash FROM sessions'));
  assert.ok(rows.length >= 3);
  for (const row of rows) {
    assert.match(row.token_hash, /^[0-9a-f]{64}$/);
    assert.notEqual(row.token_hash, a.cookie);
  }
});

test('login is Secure over HTTPS only through a trusted proxy', async (t) => {
  const trusted = await buildWithAdmin(t, { SVC_TRUST_PROXY_HEADERS: 'true', SVC_TRUSTED_PROXY_CIDRS: '127.0.0.1/32' });
  const viaProxy = await trusted.app.inject({
    method: 'POST',
    url: '/api/v1/auth/login',
    remoteAddress: '127.0.0.1',
    headers: { 'x-forwarded-proto': 'https', origin: 'https://localhost:80' },
    payload: ADMIN,
  });
  assert.equal(viaProxy.statusCode, 200, viaProxy.body);
  assert.match(String(viaProxy.headers['set-cookie']), /; Secure$/);
  const untrusted = await trusted.app.inject({
    method: 'POST',
    url: '/api/v1/auth/login',
    remoteAddress: '198.51.100.7',
    headers: { 'x-forwarded-proto': 'https', origin: ORIGIN },
    payload: ADMIN,
  });
  assert.equal(untrusted.statusCode, 200, untrusted.body);
  assert.doesNotMatch(String(untrusted.headers['set-cookie']), /Secure/);
});

test('behind a TLS proxy svc does not trust, a page on https://SVC_APP_BASE_URL gets a Secure cookie from every route that sets one', async (t) => {
  // The proxy ends TLS and passes the Host on, sending no X-Forwarded-Proto svc would read: the request arrives as
  // http, the page it came from (its Origin, which the CSRF check held to SVC_APP_BASE_URL's) is https.
  const { app } = await buildWithAdmin(t);
  const page = { host: 'app.example.test', origin: 'https://app.example.test' };
  const call = (url: string, payload: unknown, cookie?: string) =>
    app.inject({ method: 'POST', url, remoteAddress: '198.51.100.7', headers: { ...page, ...(cookie ? { cookie: `svc_session=${cookie}` } : {}) }, payload: payload as object });
  const login = await call('/api/v1/auth/login', ADMIN);
  assert.equal(login.statusCode, 200, login.body);
  assert.match(String(login.headers['set-cookie']), /^svc_session=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Lax; Max-Age=2592000; Secure$/);
  const changed = await call('/api/v1/auth/change-password', { current: ADMIN.password, new: 'another horse battery' }, sessionCookieOf(login)!);
  assert.equal(changed.statusCode, 200, changed.body);
  assert.match(String(changed.headers['set-cookie']), /; Secure$/, 'the rotated cookie');
  const logout = await call('/api/v1/auth/logout', undefined, sessionCookieOf(changed)!);
  assert.equal(logout.statusCode, 200, logout.body);
  assert.match(String(logout.headers['set-cookie']), /^svc_session=; .*Max-Age=0; Secure$/, 'the clearing cookie');
  // A page on http (svc's own origin over plain http, as ORIGIN is) still gets a cookie without Secure, which such a
  // browser would not send back.
  const plain = await app.inject({ method: 'POST', url: '/api/v1/auth/login', headers: { origin: ORIGIN }, payload: { ...ADMIN, password: 'another horse battery' } });
  assert.equal(plain.statusCode, 200, plain.body);
  assert.doesNotMatch(String(plain.headers['set-cookie']), /Secure/);
});

test('a trusted proxy\'s scheme counts in any case: X-Forwarded-Proto HTTPS is HTTPS, for the cookie and the origin check', async (t) => {
  const trusted = await buildWithAdmin(t, { SVC_TRUST_PROXY_HEADERS: 'true', SVC_TRUSTED_PROXY_CIDRS: '127.0.0.1/32' });
  const login = (proto: string, origin: string) =>
    trusted.app.inject({ method: 'POST', url: '/api/v1/auth/login', remoteAddress: '127.0.0.1', headers: { 'x-forwarded-proto': proto, origin }, payload: ADMIN });
  const upper = await login('HTTPS', 'https://localhost:80');
  assert.equal(upper.statusCode, 200, upper.body);
  assert.match(String(upper.headers['set-cookie']), /; Secure$/);
  // A scheme that is neither is plain http: the page's own origin is http's, and no cookie is Secure.
  const other = await login('javascript', 'http://localhost:80');
  assert.equal(other.statusCode, 200, other.body);
  assert.doesNotMatch(String(other.headers['set-cookie']), /Secure/);
  assert.equal((await login('javascript', 'javascript://localhost:80')).statusCode, 403);
});

test('unknown e-mail and wrong password: same status, body, no cookie, and the same password work', async (t) => {
  const { app, hasher } = await buildWithAdmin(t);
  const attempt = (email: string) =>
    app.inject({ method: 'POST', url: '/api/v1/auth/login', headers: { origin: ORIGIN }, payload: { email, password: 'not-the-password' } });
  const before = { ...hasher.calls };
  const unknown = await attempt('nobody@example.test');
  const afterUnknown = { ...hasher.calls };
  const wrong = await attempt(ADMIN.email);
  const afterWrong = { ...hasher.calls };
  assert.equal(unknown.statusCode, 401);
  assert.equal(wrong.statusCode, 401);
  assert.equal(unknown.body, wrong.body);
  assert.equal(json(unknown).error.code, 'invalid_credentials');
  assert.equal(unknown.headers['set-cookie'], undefined);
  assert.equal(wrong.headers['set-cookie'], undefined);
  // Timing: each path runs exactly one scrypt derivation of the same cost (the unknown one against a dummy hash).
  assert.equal(afterUnknown.dummy - before.dummy, 1);
  assert.equal(afterUnknown.verify - before.verify, 0);
  assert.equal(afterWrong.verify - afterUnknown.verify, 1);
  assert.equal(afterWrong.dummy - afterUnknown.dummy, 0);
  // A password outside the rules (too short) fails the same way.
  const short = await app.inject({ method: 'POST', url: '/api/v1/auth/login', headers: { origin: ORIGIN }, payload: { email: ADMIN.email, password: 'x' } });
  assert.equal(short.body, wrong.body);
  // E-mail is case-insensitive.
  const upper = await app.inject({ method: 'POST', url: '/api/v1/auth/login', headers: { origin: ORIGIN }, payload: { email: ADMIN.email.toUpperCase(), password: ADMIN.password } });
  assert.equal(upper.statusCode, 200);
});

test('logout ends the session and clears the cookie; the old cookie is refused', async (t) => {
  const { app, admin } = await buildWithAdmin(t);
  const old = admin.cookie!;
  const out = await admin.post('/api/v1/auth/logout');
  assert.equal(out.statusCode, 200);
  assert.match(String(out.headers['set-cookie']), /^svc_session=; Path=\/; HttpOnly; SameSite=Lax; Max-Age=0$/);
  const me = await app.inject({ url: '/api/v1/auth/me', headers: { cookie: `svc_session=${old}` } });
  assert.equal(me.statusCode, 401);
  // Logout without a session is fine and still clears the cookie.
  const again = await app.inject({ method: 'POST', url: '/api/v1/auth/logout', headers: { origin: ORIGIN } });
  assert.equal(again.statusCode, 200);
});

test('no answer of the API is stored by a cache: cookie-authenticated reads, errors and public lookups are no-store', async (t) => {
  // A shared cache may keep an answer to a request that carried a cookie (only Authorization keeps it out, RFC 9111
  // 3.5) and hand one user's `me` or audit log to the next; a browser keeps them on disk after the sign-out.
  const { app, admin } = await buildWithAdmin(t);
  for (const url of ['/api/v1/auth/me', '/api/v1/users', '/api/v1/orgs/active', '/api/v1/keys', '/api/v1/audit', '/api/v1/no-such-route']) {
    const response = await admin.get(url);
    assert.ok(response.statusCode < 500, `${url}: ${response.statusCode}`);
    assert.equal(response.headers['cache-control'], 'no-store', url);
  }
  const lookup = await app.inject({ url: '/api/v1/invites/not-a-token' });
  assert.equal(lookup.headers['cache-control'], 'no-store', 'a public lookup whose URL holds a token');
  const signedOut = await app.inject({ url: '/api/v1/auth/me' });
  assert.equal(signedOut.statusCode, 401);
  assert.equal(signedOut.headers['cache-control'], 'no-store');
  // The gateway wires are not the management API: their cache headers are their own (docs/gateway.md).
  const models = await app.inject({ url: '/v1/models', headers: { authorization: `Bearer ${BOOT}` } });
  assert.equal(models.statusCode, 200);
  assert.equal(models.headers['cache-control'], undefined);
});

test('me needs a session; API keys and the bootstrap token get 403 session_required', async (t) => {
  const { app } = await buildWithAdmin(t);
  const response = await app.inject({ url: '/api/v1/auth/me', headers: bearer(BOOT) });
  assert.equal(response.statusCode, 403);
  assert.equal(json(response).error.code, 'session_required');
  assert.equal((await app.inject({ url: '/api/v1/auth/me' })).statusCode, 401);
});

test('change password: needs the current one, ends other sessions, rotates the caller', async (t) => {
  const { app } = await buildWithAdmin(t);
  const { browser } = await makeUser(app, { email: 'ada@example.test', password: 'first-password' });
  const other = new Browser(app, '203.0.113.99');
  await other.login('ada@example.test', 'first-password');

  const wrong = await browser.post('/api/v1/auth/change-password', { current: 'nope-nope-nope', new: 'second-password' });
  assert.equal(wrong.statusCode, 400);
  assert.equal(json(wrong).error.code, 'wrong_password');
  const short = await browser.post('/api/v1/auth/change-password', { current: 'first-password', new: 'short' });
  assert.equal(short.statusCode, 400);
  assert.equal(json(short).error.details.param, 'new');

  const before = browser.cookie;
  const ok = await browser.post('/api/v1/auth/change-password', { current: 'first-password', new: 'second-password' });
  assert.equal(ok.statusCode, 200);
  assert.notEqual(browser.cookie, before);
  assert.equal((await browser.get('/api/v1/auth/me')).statusCode, 200);
  assert.equal((await other.get('/api/v1/auth/me')).statusCode, 401);
  assert.equal((await app.inject({ url: '/api/v1/auth/me', headers: { cookie: `svc_session=${before}` } })).statusCode, 401);
  await new Browser(app).login('ada@example.test', 'second-password');
});

test('a sign-in, a password change or an admin reset whose user is deleted while the password is checked answers 401 or 404 and leaves no session', async (t) => {
  const hasher = gatedHasher();
  const { app, services } = await buildWithAdmin(t, {}, { passwordHasher: hasher });
  /** Start `request`, delete the user while its password is being checked, then let it finish. */
  async function racingDeletion(id: string, request: () => Promise<{ statusCode: number; body: string }>) {
    const held = hasher.hold();
    const pending = request();
    const release = await held;
    assert.equal((await app.inject({ method: 'DELETE', url: `/api/v1/users/${id}`, headers: operator(BOOT) })).statusCode, 200);
    release();
    return pending;
  }
  const sessions = () => services.store.read((sql) => sql.get<{ n: number }>('SELECT COUNT(*) AS n FROM sessions')!.n);

  const signingIn = await makeUser(app, { email: 'signing-in@example.test' });
  const before = await sessions();
  const login = await racingDeletion(signingIn.id, () => new Browser(app).post('/api/v1/auth/login', { email: 'signing-in@example.test', password: 'a-good-password' }));
  assert.equal(login.statusCode, 401, login.body);
  assert.equal(json(login).error.code, 'invalid_credentials');
  assert.equal(await sessions(), before - 1, 'the deleted user\'s sessions are gone and no new one was made');

  const changing = await makeUser(app, { email: 'changing@example.test' });
  const change = await racingDeletion(changing.id, () => changing.browser.post('/api/v1/auth/change-password', { current: 'a-good-password', new: 'another-password' }));
  assert.equal(change.statusCode, 401, change.body);

  const reset = await makeUser(app, { email: 'reset@example.test' });
  const resetting = await racingDeletion(reset.id, () => app.inject({ method: 'POST', url: `/api/v1/users/${reset.id}/reset-password`, headers: operator(BOOT) }));
  assert.equal(resetting.statusCode, 404, resetting.body);
  assert.equal(json(resetting).error.code, 'not_found');
});

test('a sign-in whose password is changed or reset while it is checked answers 401 and leaves no session made with the old password', async (t) => {
  const hasher = gatedHasher();
  const { app, services } = await buildWithAdmin(t, {}, { passwordHasher: hasher });
  const sessionsOf = (id: string) => services.store.read((sql) => sql.get<{ n: number }>('SELECT COUNT(*) AS n FROM sessions WHERE user_id = ?', [id])!.n);
  /** Sign in with `password`, change the password while it is being checked, then let the sign-in finish. */
  async function racingChange(email: string, password: string, change: () => Promise<{ statusCode: number; body: string }>) {
    const held = hasher.hold();
    const signingIn = new Browser(app, '203.0.113.30').post('/api/v1/auth/login', { email, password });
    const release = await held;
    const changed = await change();
    assert.equal(changed.statusCode, 200, changed.body);
    release();
    return signingIn;
  }

  const owner = await makeUser(app, { email: 'changes-own@example.test' });
  const login = await racingChange('changes-own@example.test', 'a-good-password', () =>
    owner.browser.post('/api/v1/auth/change-password', { current: 'a-good-password', new: 'the-new-password' }),
  );
  assert.equal(login.statusCode, 401, login.body);
  assert.equal(json(login).error.code, 'invalid_credentials');
  assert.equal(await sessionsOf(owner.id), 1, 'only the session the change kept signed in');

  const reset = await makeUser(app, { email: 'reset-by-admin@example.test' });
  const afterReset = await racingChange('reset-by-admin@example.test', 'a-good-password', () =>
    app.inject({ method: 'POST', url: `/api/v1/users/${reset.id}/reset-password`, headers: operator(BOOT) }),
  );
  assert.equal(afterReset.statusCode, 401, afterReset.body);
  assert.equal(await sessionsOf(reset.id), 0);

  // A password stored with weaker parameters is rehashed by the sign-in that checked it: not over the new password.
  const weak = await makeUser(app, { email: 'weak-hash@example.test' });
  const weakHash = await createPasswordHasher({ costLog2: 4 }).hash('a-good-password');
  await services.store.write((sql) => sql.run('UPDATE users SET password_hash = ? WHERE id = ?', [weakHash, weak.id]));
  const rehashing = await racingChange('weak-hash@example.test', 'a-good-password', () =>
    weak.browser.post('/api/v1/auth/change-password', { current: 'a-good-password', new: 'the-new-password' }),
  );
  assert.equal(rehashing.statusCode, 401, rehashing.body);
  assert.equal((await new Browser(app, '203.0.113.31').post('/api/v1/auth/login', { email: 'weak-hash@example.test', password: 'a-good-password' })).statusCode, 401);
  await new Browser(app, '203.0.113.32').login('weak-hash@example.test', 'the-new-password');
});

test('a password change whose password is reset while the current one is checked answers 401 and leaves the reset standing', async (t) => {
  const hasher = gatedHasher();
  const { app, services } = await buildWithAdmin(t, {}, { passwordHasher: hasher });
  const { browser: stolen, id } = await makeUser(app, { email: 'stolen@example.test' });
  const sessionsOf = () => services.store.read((sql) => sql.get<{ n: number }>('SELECT COUNT(*) AS n FROM sessions WHERE user_id = ?', [id])!.n);

  // Whoever holds the session and the old password changes it; an admin resets it (it leaked) meanwhile.
  const held = hasher.hold();
  const changing = stolen.post('/api/v1/auth/change-password', { current: 'a-good-password', new: 'the-takers-password' });
  const release = await held;
  const reset = await app.inject({ method: 'POST', url: `/api/v1/users/${id}/reset-password`, headers: operator(BOOT) });
  assert.equal(reset.statusCode, 200, reset.body);
  release();
  const changed = await changing;
  assert.equal(changed.statusCode, 401, changed.body);
  assert.equal(sessionCookieOf(changed), null);
  assert.equal(await sessionsOf(), 0, 'the reset ended every session and the change made none');
  assert.equal((await new Browser(app, '203.0.113.40').post('/api/v1/auth/login', { email: 'stolen@example.test', password: 'the-takers-password' })).statusCode, 401);
  await new Browser(app, '203.0.113.41').login('stolen@example.test', json(reset).tempPassword);
});

test('a temporary password must be changed before anything but the account endpoints', async (t) => {
  const { app } = await buildWithAdmin(t);
  await app.inject({ method: 'POST', url: '/api/v1/users', headers: bearer(BOOT), payload: { email: 'tmp@example.test', tempPassword: 'temporary-1', orgRole: 'admin' } });
  const user = new Browser(app);
  const me = await user.login('tmp@example.test', 'temporary-1');
  assert.equal(me.mustChangePassword, true);
  const keys = await user.get('/api/v1/keys');
  assert.equal(keys.statusCode, 403);
  assert.equal(json(keys).error.code, 'password_change_required');
  assert.equal((await user.get('/api/v1/auth/me')).statusCode, 200);
  assert.equal((await user.post('/api/v1/auth/change-password', { current: 'temporary-1', new: 'permanent-1' })).statusCode, 200);
  assert.equal((await user.get('/api/v1/keys')).statusCode, 200);
});

test('CSRF: cookie mutations from a foreign or missing origin are refused and change nothing; bearer calls are not affected', async (t) => {
  const { app, admin } = await buildWithAdmin(t);
  const cookie = { cookie: `svc_session=${admin.cookie}` };
  const create = (headers: Record<string, string>) =>
    app.inject({ method: 'POST', url: '/api/v1/keys', headers: { ...cookie, ...headers }, payload: { name: 'csrf' } });
  const foreign = await create({ origin: 'https://evil.example' });
  assert.equal(foreign.statusCode, 403);
  assert.equal(json(foreign).error.code, 'csrf_rejected');
  assert.equal((await create({})).statusCode, 403);
  assert.equal((await create({ origin: 'null' })).statusCode, 403);
  assert.equal((await create({ referer: 'https://evil.example/page' })).statusCode, 403);
  const keys = json(await app.inject({ url: '/api/v1/keys', headers: cookie })).keys;
  assert.equal(keys.length, 0);
  // Same origin, a Referer from the page, and the configured app origin are accepted.
  assert.equal((await create({ origin: ORIGIN })).statusCode, 201);
  assert.equal((await create({ referer: `${ORIGIN}/login` })).statusCode, 201);
  assert.equal((await create({ origin: 'https://app.example.test' })).statusCode, 201);
  // GETs with the cookie need no origin; bearer mutations never do.
  assert.equal((await app.inject({ url: '/api/v1/keys', headers: cookie })).statusCode, 200);
  assert.equal((await app.inject({ method: 'POST', url: '/api/v1/keys', headers: { ...bearer(BOOT), origin: 'https://evil.example' }, payload: { name: 'x' } })).statusCode, 201);
  // Login CSRF: a foreign page cannot sign a browser in.
  const login = await app.inject({ method: 'POST', url: '/api/v1/auth/login', headers: { origin: 'https://evil.example' }, payload: ADMIN });
  assert.equal(login.statusCode, 403);
  assert.equal(login.headers['set-cookie'], undefined);
});

test('login limits: 20 per minute per address, X-Forwarded-For from an untrusted client changes nothing', async (t) => {
  const { app, clock } = await buildWithAdmin(t);
  const statuses: number[] = [];
  for (let i = 0; i < 21; i++) {
    const response = await app.inject({
      method: 'POST',
      url: '/api/v1/auth/login',
      remoteAddress: '198.51.100.20',
      headers: { origin: ORIGIN, 'x-forwarded-for': `10.0.${i}.1` },
      payload: { email: `user${i}@example.test`, password: 'whatever-pass' },
    });
    statuses.push(response.statusCode);
    if (i === 20) {
      assert.equal(json(response).error.code, 'rate_limited');
      assert.ok(Number(response.headers['retry-after']) >= 1);
    }
  }
  assert.deepEqual(statuses, [...Array(20).fill(401), 429]);
  // Another address is not affected; the window slides.
  const elsewhere = await app.inject({ method: 'POST', url: '/api/v1/auth/login', remoteAddress: '198.51.100.21', headers: { origin: ORIGIN }, payload: ADMIN });
  assert.equal(elsewhere.statusCode, 200);
  clock.advance(61_000);
  const later = await app.inject({ method: 'POST', url: '/api/v1/auth/login', remoteAddress: '198.51.100.20', headers: { origin: ORIGIN }, payload: ADMIN });
  assert.equal(later.statusCode, 200);
});

test('failed logins per e-mail: 10 per 15 minutes, known and unknown addresses alike, across addresses', async (t) => {
  const { app, clock } = await buildWithAdmin(t);
  for (const email of [ADMIN.email, 'ghost@example.test']) {
    const statuses: number[] = [];
    for (let i = 0; i < 11; i++) {
      const response = await app.inject({
        method: 'POST',
        url: '/api/v1/auth/login',
        remoteAddress: `192.0.2.${i + 1}`,
        headers: { origin: ORIGIN },
        payload: { email, password: 'wrong-password' },
      });
      statuses.push(response.statusCode);
    }
    assert.deepEqual(statuses, [...Array(10).fill(401), 429], email);
  }
  // Even the right password waits out the window, then works.
  const locked = await app.inject({ method: 'POST', url: '/api/v1/auth/login', remoteAddress: '192.0.2.99', headers: { origin: ORIGIN }, payload: ADMIN });
  assert.equal(locked.statusCode, 429);
  clock.advance(15 * 60_000 + 1000);
  const open = await app.inject({ method: 'POST', url: '/api/v1/auth/login', remoteAddress: '192.0.2.99', headers: { origin: ORIGIN }, payload: ADMIN });
  assert.equal(open.statusCode, 200);
});

test('failed logins per e-mail after the clock steps back (NTP, a VM resumed): a lockout lasts at most the step plus its window, and one a window or more ahead is forgotten, its rows pruned', async (t) => {
  const { app, clock, services } = await buildWithAdmin(t);
  const login = (email: string, password: string, i: number) =>
    app.inject({ method: 'POST', url: '/api/v1/auth/login', remoteAddress: `192.0.2.${i + 1}`, headers: { origin: ORIGIN }, payload: { email, password } });
  for (let i = 0; i < 10; i++) assert.equal((await login(ADMIN.email, 'wrong-password', i)).statusCode, 401);
  for (let i = 0; i < 10; i++) assert.equal((await login('ghost@example.test', 'wrong-password', i)).statusCode, 401);
  const attemptsAt = clock.t;
  // Five minutes back: the ten failures are five minutes ahead of the clock, counted as if made now, twenty to wait.
  clock.advance(-5 * 60_000);
  const shortStep = await login(ADMIN.email, ADMIN.password, 20);
  assert.equal(shortStep.statusCode, 429);
  assert.equal(Number(shortStep.headers['retry-after']), 20 * 60);
  // An hour back: they are from before the step, which held the address for an hour and a quarter (retry-after 4500).
  clock.t = attemptsAt - 3_600_000;
  assert.equal((await login(ADMIN.email, ADMIN.password, 21)).statusCode, 200);
  const rows = () => services.store.read((sql) => sql.get<{ n: number }>('SELECT COUNT(*) AS n FROM rate_events WHERE bucket = ?', ['loginFailures'])!.n);
  assert.equal(await rows(), 20);
  // Housekeeping deletes the attempts no window can count again before the clock is back where they were made.
  await services.limits.prune(100);
  assert.equal(await rows(), 0);
});

test('failed logins per e-mail: a burst of concurrent guesses meets the limit as a sequence does; a success is not counted', async (t) => {
  const { app } = await buildWithAdmin(t);
  const login = (password: string, i: number) =>
    app.inject({ method: 'POST', url: '/api/v1/auth/login', remoteAddress: `192.0.2.${i + 1}`, headers: { origin: ORIGIN }, payload: { email: ADMIN.email, password } });
  // Nine failures and a success: the success leaves no count behind, so a tenth failure is still answered.
  for (let i = 0; i < 9; i++) assert.equal((await login('wrong-password', i)).statusCode, 401);
  assert.equal((await login(ADMIN.password, 20)).statusCode, 200);
  assert.equal((await login('wrong-password', 21)).statusCode, 401);
  assert.equal((await login(ADMIN.password, 22)).statusCode, 429, 'ten failures counted');

  // Twelve wrong guesses and the right password at once, on another account: only ten are checked.
  const other = await buildWithAdmin(t);
  const burst = await Promise.all(
    [...Array.from({ length: 12 }, () => 'wrong-password'), ADMIN.password].map((password, i) =>
      other.app.inject({ method: 'POST', url: '/api/v1/auth/login', remoteAddress: `198.51.100.${i + 1}`, headers: { origin: ORIGIN }, payload: { email: ADMIN.email, password } }),
    ),
  );
  const statuses = burst.map((response) => response.statusCode);
  assert.equal(statuses.filter((status) => status === 401).length, 10, statuses.join(' '));
  assert.equal(statuses.filter((status) => status === 200).length, 0, statuses.join(' '));
  assert.equal(statuses.filter((status) => status === 429).length, 3, statuses.join(' '));
});

test('the first user switches svc into login mode, for good', async (t) => {
  const { app } = await buildAccounts(t);
  assert.equal((await app.inject({ url: '/api/v1/keys' })).statusCode, 200); // open dev mode
  const created = await app.inject({ method: 'POST', url: '/api/v1/users', payload: { email: 'first@example.test', tempPassword: 'temporary-1' } });
  // Open dev mode is an org admin of the default tenant: it may create users.
  assert.equal(created.statusCode, 201, created.body);
  assert.equal((await app.inject({ url: '/api/v1/keys' })).statusCode, 401);
  assert.equal((await app.inject({ method: 'POST', url: '/v1/chat/completions', payload: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] } })).statusCode, 401);
  // Deleting every user does not reopen svc.
  const user = new Browser(app);
  await user.login('first@example.test', 'temporary-1');
  await user.post('/api/v1/auth/change-password', { current: 'temporary-1', new: 'permanent-1' });
  assert.equal((await app.inject({ url: '/api/v1/keys' })).statusCode, 401);
});

test('bootstrap admin: idempotent, raised if present, never resets a changed password', async (t) => {
  const { mkdtempSync, rmSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-bootstrap-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const env = { SVC_ADMIN_EMAIL: 'Boss@Example.test', SVC_ADMIN_PASSWORD: 'initial-password' };

  const first = await buildAccounts(t, { env, dataDir });
  const boss = new Browser(first.app);
  await boss.login('boss@example.test', 'initial-password');
  assert.equal((await boss.post('/api/v1/auth/change-password', { current: 'initial-password', new: 'changed-password' })).statusCode, 200);
  await first.app.close();
  await first.services.store.close();

  const second = await buildAccounts(t, { env, dataDir });
  const users = await second.services.store.read((sql) => sql.all<{ email: string; role: string }>('SELECT email, role FROM users'));
  assert.deepEqual(users, [{ email: 'boss@example.test', role: 'admin' }]);
  const again = new Browser(second.app);
  const fail = await again.post('/api/v1/auth/login', { email: 'boss@example.test', password: 'initial-password' });
  assert.equal(fail.statusCode, 401);
  await again.login('boss@example.test', 'changed-password');
  const owners = await second.services.store.read((sql) => sql.all('SELECT tenant_id, role FROM org_members'));
  assert.deepEqual(owners, [{ tenant_id: 'default', role: 'owner' }]);
});

test('bootstrap admin with a password that breaks the rules stops start-up with a configuration error', async (t) => {
  await assert.rejects(buildAccounts(t, { env: { SVC_ADMIN_EMAIL: 'a@example.test', SVC_ADMIN_PASSWORD: 'short' } }), /invalid configuration: SVC_ADMIN_PASSWORD: must be 8 to 256/);
  await assert.rejects(buildAccounts(t, { env: { SVC_ADMIN_EMAIL: 'a@example.test' } }), /SVC_ADMIN_EMAIL and SVC_ADMIN_PASSWORD must be set together/);
});

test('a bootstrap admin address that is not an e-mail address stops start-up with a configuration error naming it', async (t) => {
  for (const email of ['notanemail', 'a@b@c', 'boss\u200b@example.test', 'a b@example.test']) {
    await assert.rejects(buildAccounts(t, { env: { SVC_ADMIN_EMAIL: email, SVC_ADMIN_PASSWORD: 'longenough1' } }), /invalid configuration: SVC_ADMIN_EMAIL: must/, email);
  }
});
