/**
 * /login and / in a real browser (test/support/chromium.ts): the lockout, temporary passwords, svc out of reach,
 * sessions that end behind the page's back, signing out, where ?next= may lead, and a page of another origin on the
 * same site holding the session cookie. The pages e-mailed links open are in invite.test.ts.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import test from 'node:test';
import { chromiumForFile, endSession, FIRST_PASSWORD, SECOND_PASSWORD, signIn, signUp, startSvc, text, watch } from '../support/chromium.ts';

const { requireBrowser, newContext } = chromiumForFile();

test('after ten wrong passwords /login says the lockout and its wait once, in minutes', async (t) => {
  requireBrowser();
  const svc = await startSvc(t);
  const email = 'lin@example.com';
  assert.equal((await svc.admin('POST', '/users', { email, tempPassword: FIRST_PASSWORD })).status, 201);
  // Ten failures lock the address for 15 minutes (docs/accounts.md); the API spends them, the page meets the lock.
  const firstFailure = Date.now();
  for (let i = 0; i < 10; i++) {
    const login = await fetch(`${svc.address}/api/v1/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: svc.address },
      body: JSON.stringify({ email, password: `wrong password ${i}` }),
    });
    assert.equal(login.status, 401);
  }

  const context = await newContext(t);
  const page = await context.newPage();
  const problems = watch(page);
  await page.goto(`${svc.address}/login`);
  await signIn(page, email, FIRST_PASSWORD);
  await page.locator('[role="alert"]').filter({ hasText: /\S/ }).waitFor();
  const alert = await text(page, '[role="alert"]');
  // Not "Too many attempts. Retry after 900 s. Try again in 900 seconds.": one wait, in words a person reads. The
  // lock counts from the first failure, and a loaded machine can take minutes to get here: what is left of it.
  const minutes = Number(/^Too many attempts\. Try again in (\d+) minutes\.$/.exec(alert)?.[1]);
  const leftAtMost = 15 - Math.floor((Date.now() - firstFailure) / 60_000);
  assert.ok(minutes <= 15 && minutes >= leftAtMost - 1, `${alert} (at most ${leftAtMost} minutes left)`);
  assert.deepEqual(problems, []);
});

test('a temporary password is replaced on /login, for the signed-in address; then the sign-in continues to ?next=', async (t) => {
  requireBrowser();
  const svc = await startSvc(t);
  const email = 'tmp@example.com';
  assert.equal((await svc.admin('POST', '/users', { email, tempPassword: FIRST_PASSWORD })).status, 201);

  const context = await newContext(t);
  const page = await context.newPage();
  const problems = watch(page);
  await page.goto(`${svc.address}/login?next=${encodeURIComponent('/verify-email')}`);
  await signIn(page, email, FIRST_PASSWORD);
  await page.getByRole('heading', { name: 'Choose a new password' }).waitFor();
  // The sign-in form (and its e-mail field) is hidden now: the form names the account whose password changes.
  assert.equal(await page.locator('#change-password input[autocomplete="username"]').inputValue(), email);
  // Opened again with the change still pending, the page asks for it first, for the same address.
  await page.reload();
  await page.getByRole('heading', { name: 'Choose a new password' }).waitFor();
  assert.equal(await page.locator('#change-password input[autocomplete="username"]').inputValue(), email);
  await page.getByLabel('Current password').fill(FIRST_PASSWORD);
  await page.getByLabel('New password', { exact: true }).fill(SECOND_PASSWORD);
  await page.getByLabel('Repeat the new password').fill(SECOND_PASSWORD);
  await page.getByRole('button', { name: 'Change password' }).click();
  await page.waitForURL(`${svc.address}/verify-email`);
  assert.equal((await svc.admin('GET', `/users?email=${encodeURIComponent(email)}`)).body.users[0].mustChangePassword, false);
  assert.deepEqual(problems, []);
});

test('keyboard only: when svc cannot be reached, /login says so and keeps the focus in the form, and Enter again signs in once svc is back', async (t) => {
  requireBrowser();
  const svc = await startSvc(t);
  const email = 'kay@example.com';
  assert.equal((await svc.admin('POST', '/users', { email, tempPassword: FIRST_PASSWORD })).status, 201);

  const context = await newContext(t);
  const page = await context.newPage();
  await page.goto(`${svc.address}/login`);
  await page.getByRole('heading', { name: 'Sign in' }).waitFor();
  assert.equal(await page.evaluate('document.activeElement.id'), 'email', 'the page opens with the focus on the e-mail field');

  // svc goes away: the sign-in call cannot connect. Routed before the keys are typed, so that the route is surely in
  // force when Enter sends the call (once in CI, under load, the call seemed to reach svc and no error came).
  await page.route('**/api/v1/**', (route) => route.abort('connectionrefused'));
  await page.keyboard.type(email);
  await page.keyboard.press('Tab');
  await page.keyboard.type(FIRST_PASSWORD);
  await page.keyboard.press('Enter');
  // Whatever the page says first (its alert, or the next step's heading had the call got through), then what it is.
  await page.locator('#alert').filter({ hasText: /\S/ }).or(page.getByRole('heading', { name: 'Choose a new password' })).first().waitFor();
  assert.equal(await text(page, '#alert'), 'svc could not be reached. Check your connection and try again.', `the page's heading: ${await text(page, '#title')}`);
  // The controls were disabled while the call ran, which drops the focus to the document; it comes back to the field.
  assert.equal(await page.evaluate('document.activeElement.id'), 'password', 'the focus is back where Enter was pressed');

  // svc is back: Enter again, without reaching for the mouse or tabbing through the page.
  await page.unroute('**/api/v1/**');
  await page.keyboard.type(FIRST_PASSWORD);
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: 'Choose a new password' }).waitFor();
  assert.equal(await page.evaluate('document.activeElement.id'), 'current');
});

test('a session that ends while /login asks for a new password sends the user back to sign in, in words, not "bearer token"', async (t) => {
  requireBrowser();
  const svc = await startSvc(t);
  const email = 'sam@example.com';
  assert.equal((await svc.admin('POST', '/users', { email, tempPassword: FIRST_PASSWORD })).status, 201);

  const context = await newContext(t);
  const page = await context.newPage();
  const problems = watch(page);
  await page.goto(`${svc.address}/login`);
  await signIn(page, email, FIRST_PASSWORD);
  await page.getByRole('heading', { name: 'Choose a new password' }).waitFor();

  // The session ends behind the page's back (signed out in another tab; an administrator's reset ends it the same way).
  await endSession(context, svc);

  await page.getByLabel('Current password').fill(FIRST_PASSWORD);
  await page.getByLabel('New password', { exact: true }).fill(SECOND_PASSWORD);
  await page.getByLabel('Repeat the new password').fill(SECOND_PASSWORD);
  await page.getByRole('button', { name: 'Change password' }).click();
  await page.getByRole('heading', { name: 'Sign in' }).waitFor();
  assert.equal(await text(page, '[role="alert"]'), 'Your session has ended. Sign in again.');
  assert.equal(await page.getByLabel('E-mail').inputValue(), email, 'the address is still filled in');

  // Signing in again leads back to the change the temporary password still needs.
  await page.getByLabel('Password', { exact: true }).fill(FIRST_PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Choose a new password' }).waitFor();
  assert.deepEqual(problems, []);
});

test('keyboard only: when signing out fails, /login says so and keeps the focus on Sign out', async (t) => {
  requireBrowser();
  const svc = await startSvc(t, { SVC_ALLOW_PUBLIC_SIGNUP: 'true' });
  const email = 'otto@example.com';
  await signUp(svc, email, 'Otto');

  const context = await newContext(t);
  const page = await context.newPage();
  await page.goto(`${svc.address}/login`);
  await signIn(page, email, FIRST_PASSWORD);
  await page.getByRole('heading', { name: 'Signed in' }).waitFor();

  await page.route('**/api/v1/auth/logout', (route) => route.abort('connectionrefused'));
  await page.getByRole('button', { name: 'Sign out' }).focus();
  await page.keyboard.press('Enter');
  await page.getByText('svc could not be reached. Check your connection and try again.').waitFor();
  assert.equal(await page.evaluate('document.activeElement.id'), 'sign-out', 'the focus is back on Sign out');
  assert.equal(await page.getByRole('button', { name: 'Sign out' }).isEnabled(), true);

  // svc is back: Enter again signs out.
  await page.unroute('**/api/v1/auth/logout');
  await page.keyboard.press('Enter');
  await page.getByText('You are signed out.').waitFor();
  assert.equal((await context.request.get(`${svc.address}/api/v1/auth/me`)).status(), 401);
});

test('/ in a browser: signed out it offers sign-in, which comes back to it; signed in it names user and organization and signs out', async (t) => {
  requireBrowser();
  const svc = await startSvc(t, { SVC_ALLOW_PUBLIC_SIGNUP: 'true' });
  const email = 'hopper@example.com';
  await signUp(svc, email, 'Hopper');

  const context = await newContext(t);
  const page = await context.newPage();
  const problems = watch(page);
  const response = await page.goto(`${svc.address}/`);
  assert.equal(response?.status(), 200);
  await page.getByRole('heading', { name: 'svc' }).waitFor();
  await page.getByText('You are not signed in.').waitFor();
  // Where SDKs point, as this browser reaches svc.
  assert.equal(await text(page, '#base-openai'), `${svc.address}/v1`);
  assert.equal(await text(page, '#base-messages'), svc.address);

  await page.getByRole('link', { name: 'Sign in' }).click();
  await page.waitForURL(`${svc.address}/login?next=%2F`);
  await signIn(page, email, FIRST_PASSWORD);
  await page.waitForURL(`${svc.address}/`);
  await page.getByText(/^Signed in as hopper@example\.com in /).waitFor();

  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByText('You are signed out.').waitFor();
  await page.getByText('You are not signed in.').waitFor();
  assert.equal(await page.getByRole('button', { name: 'Sign out' }).isVisible(), false);
  assert.equal((await context.request.get(`${svc.address}/api/v1/auth/me`)).status(), 401);
  assert.deepEqual(problems, []);
});

test('/login?next= never leaves svc: paths whose dot segments resolve to //host are refused like //host itself', async (t) => {
  requireBrowser();
  const svc = await startSvc(t, { SVC_ALLOW_PUBLIC_SIGNUP: 'true' });
  const email = 'lovelace@example.com';
  await signUp(svc, email, 'Lovelace');

  const context = await newContext(t);
  const page = await context.newPage();
  const problems = watch(page);
  // Any navigation to another host is recorded and answered here, never sent.
  const left: string[] = [];
  await context.route((url) => url.origin !== svc.address, (route) => {
    left.push(route.request().url());
    return route.fulfill({ status: 200, contentType: 'text/html', body: 'elsewhere' });
  });

  // A fresh sign-in with such a next stays on svc and says who is signed in.
  await page.goto(`${svc.address}/login?next=${encodeURIComponent('/.//evil.example/')}`);
  await signIn(page, email, FIRST_PASSWORD);
  await Promise.race([page.getByText(/^Signed in as lovelace@example\.com/).waitFor(), page.getByText('elsewhere').waitFor()]);
  assert.deepEqual(left, [], 'the sign-in continued to another host');
  assert.equal(new URL(page.url()).origin, svc.address);

  // Signed in, the page offers no "Continue" link for any of them.
  for (const next of ['//evil.example/', '/\\evil.example/', 'https:evil.example', 'javascript:alert(1)', '/\t/evil.example/', '/..//evil.example/', '/%2e//evil.example/', '/a/..//evil.example/', '/.\\/evil.example/']) {
    await page.goto(`${svc.address}/login?next=${encodeURIComponent(next)}`);
    await page.getByText(/^Signed in as lovelace@example\.com/).waitFor();
    assert.equal(await page.locator('#continue').isHidden(), true, `a Continue link for next=${JSON.stringify(next)}: ${await page.locator('#continue-link').getAttribute('href')}`);
  }
  // A same-origin path that merely contains slashes is still a place to continue to, on svc.
  await page.goto(`${svc.address}/login?next=${encodeURIComponent('/%2F%2Fevil.example/')}`);
  await page.getByText(/^Signed in as lovelace@example\.com/).waitFor();
  await page.getByRole('link', { name: 'Continue' }).click();
  await page.waitForURL((url) => url.pathname === '/%2F%2Fevil.example/');
  assert.equal(new URL(page.url()).origin, svc.address);
  assert.deepEqual(left, []);
  assert.deepEqual(problems.filter((p) => !p.includes('404')), []);
});

test('a page on another origin of the same site, whose requests carry the Lax session cookie, cannot use the session', async (t) => {
  requireBrowser();
  const svc = await startSvc(t, { SVC_ALLOW_PUBLIC_SIGNUP: 'true' });
  const email = 'curie@example.com';
  await signUp(svc, email, 'Curie');
  // Another port of the same host: another origin, the same site, so SameSite=Lax sends svc's cookie along.
  const foreign = createServer((_request, response) => response.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>elsewhere</title>'));
  await new Promise<void>((resolve) => foreign.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => foreign.close(() => resolve())));
  const foreignOrigin = `http://127.0.0.1:${(foreign.address() as AddressInfo).port}`;

  const context = await newContext(t);
  const page = await context.newPage();
  await page.goto(`${svc.address}/login`);
  await signIn(page, email, FIRST_PASSWORD);
  await page.getByRole('heading', { name: 'Signed in' }).waitFor();
  const sessionCall = (method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> =>
    page.evaluate(
      async ([method, path, body]) => {
        const response = await fetch(`/api/v1${path}`, {
          method,
          headers: body === undefined ? {} : { 'content-type': 'application/json' },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        });
        return { status: response.status, body: await response.json() };
      },
      [method, path, body] as const,
    );
  const created = await sessionCall('POST', '/keys', { name: 'kept' });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const keyId: string = created.body.key.id;

  // Still signed in, the one key still active, nothing planted.
  const assertUntouched = async (when: string) => {
    assert.equal((await sessionCall('GET', '/auth/me')).status, 200, `still signed in ${when}`);
    const keys = await sessionCall('GET', '/keys');
    assert.deepEqual(keys.body.keys.map((key: { name: string; status: string }) => `${key.name} ${key.status}`), ['kept active'], when);
  };

  // What a page may send without asking svc first (no CORS preflight): a fetch in no-cors mode without a body (no
  // Content-Type, so no 415 either: only the origin check stands between it and the route), and forms, whose bodies
  // are never JSON (text/plain shaped like JSON, url-encoded).
  const attacker = await context.newPage();
  await attacker.goto(`${foreignOrigin}/`);
  await attacker.evaluate(
    async ([svcAddress, keyId]) => {
      for (const path of [`/api/v1/keys/${keyId}/revoke`, '/api/v1/auth/logout']) {
        await fetch(`${svcAddress}${path}`, { method: 'POST', mode: 'no-cors', credentials: 'include' });
      }
    },
    [svc.address, keyId] as const,
  );
  await assertUntouched('after the fetches');
  // A form's answer is readable where it lands. csrf_rejected also shows the cookie went along: without a session,
  // logout is a 200 and the others a 401.
  const forms = [
    { path: `/api/v1/keys/${keyId}/revoke`, enctype: 'application/x-www-form-urlencoded', field: '' },
    { path: '/api/v1/auth/logout', enctype: 'application/x-www-form-urlencoded', field: '' },
    { path: '/api/v1/keys', enctype: 'text/plain', field: `<input name='{"name":"planted","x":"' value='"}'>` },
    { path: '/api/v1/keys', enctype: 'application/x-www-form-urlencoded', field: `<input name="name" value="planted">` },
  ];
  for (const { path, enctype, field } of forms) {
    await attacker.goto(`${foreignOrigin}/`);
    await attacker.setContent(`<form method="post" action="${svc.address}${path}" enctype="${enctype}">${field}<button>Send</button></form>`);
    await attacker.getByRole('button', { name: 'Send' }).click();
    await attacker.waitForURL(`${svc.address}${path}`);
    assert.equal(JSON.parse(await attacker.locator('body').innerText()).error.code, 'csrf_rejected', `${path} ${enctype}`);
  }

  await assertUntouched('after the forms');
});
