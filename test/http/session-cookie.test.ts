/**
 * The `svc_session` cookie as the HTTP edge reads it (src/http/session-cookie.ts). A request carrying it twice is
 * authenticated by neither: a page on a sibling subdomain can set a second `svc_session` for the parent domain with a
 * longer Path, which browsers send first, so a victim's dashboard ran in the attacker's session (cookie tossing).
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import { json } from '../support/build.ts';
import { ADMIN, buildWithAdmin, makeUser, ORIGIN } from '../support/accounts.ts';

test('two svc_session cookies authenticate as neither, in either order; one is read as ever', async (t) => {
  const { app, admin } = await buildWithAdmin(t);
  const attacker = await makeUser(app, { email: 'attacker@example.test' });
  const me = (cookie: string) => app.inject({ url: '/api/v1/auth/me', headers: { cookie } });

  for (const cookie of [`svc_session=${attacker.browser.cookie}; svc_session=${admin.cookie}`, `svc_session=${admin.cookie}; theme=dark; svc_session=${attacker.browser.cookie}`]) {
    const answer = await me(cookie);
    assert.equal(answer.statusCode, 401, answer.body);
    assert.equal(json(answer).error.code, 'unauthorized');
  }
  // Two Cookie header lines (node joins them with "; ") are the same two cookies.
  assert.equal((await app.inject({ url: '/api/v1/auth/me', headers: { cookie: [`svc_session=${admin.cookie}`, `svc_session=${attacker.browser.cookie}`] } })).statusCode, 401);

  const alone = await me(`other=1; svc_session=${admin.cookie}; xsvc_session=junk`);
  assert.equal(alone.statusCode, 200);
  assert.equal(json(alone).user.email, ADMIN.email);
});

test('logout with two svc_session cookies ends the sessions of both, whoever they belong to', async (t) => {
  const { app, admin } = await buildWithAdmin(t);
  const attacker = await makeUser(app, { email: 'attacker@example.test' });
  const me = (token: string) => app.inject({ url: '/api/v1/auth/me', headers: { cookie: `svc_session=${token}` } });
  assert.equal((await me(admin.cookie!)).statusCode, 200);

  // The tossed cookie first, as browsers send the longer path first; a malformed third value is skipped.
  const logout = await app.inject({
    method: 'POST',
    url: '/api/v1/auth/logout',
    headers: { origin: ORIGIN, cookie: `svc_session=${attacker.browser.cookie}; svc_session=%zz; svc_session=${admin.cookie}` },
  });
  assert.equal(logout.statusCode, 200, logout.body);
  assert.match(String(logout.headers['set-cookie']), /^svc_session=; .*Max-Age=0/);
  for (const token of [admin.cookie!, attacker.browser.cookie!]) assert.equal((await me(token)).statusCode, 401, 'the session is gone');
});
