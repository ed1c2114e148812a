/**
 * The pages e-mailed links open, in a real browser (test/support/chromium.ts): an invitation accepted through
 * /accept-invite, then a password reset through /login -> /reset-password -> the e-mailed link -> /login, a signup's
 * verification link through /verify-email, links whose token is no token, and names and addresses (markup, the longest
 * svc takes) as these pages and /login and / show them. /login's own behaviour is in login.test.ts.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import { chromiumForFile, endSession, FIRST_PASSWORD, linkToken, SECOND_PASSWORD, signIn, signUp, startSvc, text, watch } from '../support/chromium.ts';

const ORG = 'Acme Research';
const INVITEE = 'grace@example.com';

const { requireBrowser, newContext } = chromiumForFile();

test('an invitation is accepted through /accept-invite in Chromium; then the password is reset through the pages', async (t) => {
  requireBrowser();
  const svc = await startSvc(t);

  // An administrator (the bootstrap token) names the organization and invites Grace as an admin.
  assert.equal((await svc.admin('PATCH', '/orgs/active', { name: ORG })).status, 200);
  const created = await svc.admin('POST', '/orgs/active/invites', { email: INVITEE, role: 'admin' });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  assert.equal(JSON.stringify(created.body).includes('token'), false, 'the inviter never sees the token');
  const invite = await linkToken(svc, INVITEE, '/accept-invite');
  assert.equal(invite.url.pathname, '/accept-invite');

  const context = await newContext(t);

  await t.test('the new member creates the account on the page and is signed in', async () => {
    const page = await context.newPage();
    const problems = watch(page);
    const referers: string[] = [];
    page.on('request', (request) => {
      const referer = request.headers()['referer'];
      if (referer) referers.push(`${request.url()} <- ${referer}`);
    });

    await page.goto(`${svc.address}/accept-invite?token=${invite.token}`);
    await page.getByRole('heading', { name: `Join ${ORG}` }).waitFor();
    assert.equal(page.url(), `${svc.address}/accept-invite`, 'the token is gone from the address bar');
    assert.equal(await text(page, '#invite-org'), ORG);
    assert.equal(await text(page, '#invite-email'), INVITEE);
    assert.equal(await text(page, '#invite-role'), 'admin');
    // A password manager saves the new password for the invited address, not for the name typed above it.
    assert.equal(await page.locator('#new-account input[autocomplete="username"]').inputValue(), INVITEE);

    // The page checks what it can before asking svc.
    await page.getByLabel('Your name').fill('Grace Hopper');
    await page.getByLabel('Password', { exact: true }).fill(FIRST_PASSWORD);
    await page.getByLabel('Repeat the password').fill(`${FIRST_PASSWORD}!`);
    await page.getByRole('button', { name: 'Create account and join' }).click();
    assert.equal(await text(page, '[role="alert"]'), 'The two passwords do not match.');
    assert.equal(await page.getByLabel('Repeat the password').getAttribute('aria-invalid'), 'true');

    await page.getByLabel('Repeat the password').fill(FIRST_PASSWORD);
    await page.getByRole('button', { name: 'Create account and join' }).click();
    await page.getByText(`You joined ${ORG}.`).waitFor();
    assert.equal(await page.getByRole('link', { name: 'Go to svc' }).getAttribute('href'), '/');

    // The session cookie is in the browser, out of reach of scripts.
    const cookie = (await context.cookies(svc.address)).find((c) => c.name === 'svc_session');
    assert.ok(cookie, 'the browser holds svc_session');
    assert.equal(cookie.httpOnly, true);
    assert.equal(cookie.sameSite, 'Lax');
    assert.equal(cookie.path, '/');
    assert.equal(await page.evaluate('document.cookie'), '');
    assert.equal(await page.evaluate('sessionStorage.length'), 0, 'the kept invitation token is gone once accepted');

    assert.deepEqual(referers, [], 'no request carried a Referer (Referrer-Policy: no-referrer)');

    // "Go to svc" leads to a page (not svc's JSON 404) that says who is signed in, where.
    await page.getByRole('link', { name: 'Go to svc' }).click();
    await page.waitForURL(`${svc.address}/`);
    await page.getByRole('heading', { name: 'svc' }).waitFor();
    await page.getByText(`Signed in as ${INVITEE} in ${ORG}.`).waitFor();
    assert.deepEqual(problems, []);
    await page.close();
  });

  await t.test('svc has the member with the invited role, and the browser session is theirs', async () => {
    const users = await svc.admin('GET', `/users?email=${encodeURIComponent(INVITEE)}`);
    assert.equal(users.status, 200);
    assert.equal(users.body.users.length, 1);
    const user = users.body.users[0];
    assert.equal(user.name, 'Grace Hopper');
    assert.equal(user.emailVerified, true, 'the e-mailed link proved the address');
    assert.equal(user.orgRole, 'admin');

    const active = await svc.admin('GET', '/orgs/active');
    assert.equal(active.body.org.name, ORG);
    const member = active.body.members.find((m: { email: string }) => m.email === INVITEE);
    assert.equal(member?.role, 'admin');

    const me = await context.request.get(`${svc.address}/api/v1/auth/me`);
    assert.equal(me.status(), 200);
    const body = await me.json();
    assert.equal(body.user.email, INVITEE);
    assert.equal(body.org.name, ORG);
    assert.equal(body.org.role, 'admin');

    const lookup = await fetch(`${svc.address}/api/v1/invites/${invite.token}`);
    assert.equal(((await lookup.json()) as { status: string }).status, 'accepted');
  });

  await t.test('the invitation link cannot be used twice', async () => {
    const page = await context.newPage();
    await page.goto(`${svc.address}/accept-invite?token=${invite.token}`);
    await page.getByRole('heading', { name: 'This invitation cannot be used' }).waitFor();
    assert.match(await text(page, '[role="alert"]'), /already been accepted/);
    assert.equal(await page.locator('#new-account').isVisible(), false);
    await page.close();
  });

  await t.test('a password reset through /login, /reset-password and the e-mailed link; the new password signs in', async () => {
    const fresh = await newContext(t);
    const page = await fresh.newPage();
    const problems = watch(page);

    await page.goto(`${svc.address}/login`);
    await page.getByRole('link', { name: 'Forgot your password?' }).click();
    await page.waitForURL(`${svc.address}/reset-password`);
    await page.getByLabel('E-mail').fill(INVITEE);
    await page.getByRole('button', { name: 'Send the reset link' }).click();
    await page.getByText('If an account exists for that address, a reset link is on its way.').waitFor();

    const reset = await linkToken(svc, INVITEE, '/reset-password');
    assert.equal(reset.url.pathname, '/reset-password');
    await page.goto(`${svc.address}/reset-password?token=${reset.token}`);
    await page.getByRole('heading', { name: 'Choose a new password' }).waitFor();
    assert.equal(page.url(), `${svc.address}/reset-password`, 'the token is gone from the address bar');
    await page.getByLabel('New password', { exact: true }).fill('short');
    await page.getByLabel('Repeat the new password').fill('short');
    await page.getByRole('button', { name: 'Set the new password' }).click();
    assert.match(await text(page, '[role="alert"]'), /at least 8 characters/);
    await page.getByLabel('New password', { exact: true }).fill(SECOND_PASSWORD);
    await page.getByLabel('Repeat the new password').fill(SECOND_PASSWORD);
    await page.getByRole('button', { name: 'Set the new password' }).click();
    await page.getByRole('heading', { name: 'Password changed' }).waitFor();

    // The reset ended every session, the one of the invitation's browser too.
    assert.equal((await context.request.get(`${svc.address}/api/v1/auth/me`)).status(), 401);

    await page.getByRole('link', { name: 'Sign in with the new password' }).click();
    await page.waitForURL(`${svc.address}/login`);
    await signIn(page, INVITEE, FIRST_PASSWORD);
    await page.locator('[role="alert"]').filter({ hasText: /\S/ }).waitFor();
    assert.equal(await page.getByRole('heading', { name: 'Sign in' }).isVisible(), true, 'the old password is refused');

    await page.getByLabel('Password', { exact: true }).fill(SECOND_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Signed in' }).waitFor();
    assert.equal(await text(page, '#signed-in-as'), `Signed in as ${INVITEE} in ${ORG}.`);

    // The same link a second time: used up.
    await page.goto(`${svc.address}/reset-password?token=${reset.token}`);
    await page.getByLabel('New password', { exact: true }).fill(SECOND_PASSWORD);
    await page.getByLabel('Repeat the new password').fill(SECOND_PASSWORD);
    await page.getByRole('button', { name: 'Set the new password' }).click();
    await page.getByRole('heading', { name: 'This reset link cannot be used' }).waitFor();

    assert.deepEqual(problems, []);
  });
});

test('a signup verification link opens /verify-email and verifies the address once; a lost one is sent again from /', async (t) => {
  requireBrowser();
  const svc = await startSvc(t, { SVC_ALLOW_PUBLIC_SIGNUP: 'true' });
  await signUp(svc, 'ada@acme.io', 'Ada');
  await signUp(svc, 'bo@bo.dev', 'Bo');
  const verify = await linkToken(svc, 'ada@acme.io', '/verify-email');
  const emailVerified = async (email: string) => (await svc.admin('GET', `/users?email=${encodeURIComponent(email)}`)).body.users[0].emailVerified;

  const context = await newContext(t);
  const page = await context.newPage();
  const problems = watch(page);
  await page.goto(`${svc.address}/verify-email?token=${verify.token}`);
  await page.getByText('Your e-mail ada@acme.io is verified.').waitFor();
  assert.equal(page.url(), `${svc.address}/verify-email`);
  assert.equal(await emailVerified('ada@acme.io'), true);

  await page.goto(`${svc.address}/verify-email?token=${verify.token}`);
  await page.getByRole('heading', { name: 'Not verified' }).waitFor();
  assert.match(await text(page, '[role="alert"]'), /Sign in to ask for a new one\.$/);

  // Bo's link is lost (or used up, or expired): the refusal says to sign in and ask for another, so signing in leads
  // where that is offered. Ada, verified, is offered nothing.
  await page.getByRole('link', { name: 'Sign in' }).click();
  await signIn(page, 'ada@acme.io', FIRST_PASSWORD);
  await page.waitForURL(`${svc.address}/`);
  await page.getByText(/^Signed in as ada@acme\.io/).waitFor();
  assert.equal(await page.getByRole('button', { name: 'Send a new verification link' }).isVisible(), false);
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByText('You are signed out.').waitFor();

  await page.goto(`${svc.address}/verify-email?token=${verify.token}`);
  await page.getByRole('link', { name: 'Sign in' }).click();
  await signIn(page, 'bo@bo.dev', FIRST_PASSWORD);
  await page.waitForURL(`${svc.address}/`);
  await page.getByText(/^Your e-mail address is not verified yet/).waitFor();
  // Signed out elsewhere meanwhile: said in words (not the API's 401 about sessions), and the way back is on the page.
  await endSession(context, svc);
  await page.getByRole('button', { name: 'Send a new verification link' }).click();
  await page.getByText('Your session has ended. Sign in again.').waitFor();
  await page.getByRole('link', { name: 'Sign in' }).click();
  await signIn(page, 'bo@bo.dev', FIRST_PASSWORD);
  await page.waitForURL(`${svc.address}/`);
  const sent = svc.mail.length;
  await page.getByRole('button', { name: 'Send a new verification link' }).dblclick();
  await page.getByText('A new verification link is on its way. It replaces the links sent before.').waitFor();
  assert.equal(svc.mail.length, sent + 1, 'a double click sends one e-mail');
  const again = await linkToken(svc, 'bo@bo.dev', '/verify-email');
  await page.goto(`${svc.address}/verify-email?token=${again.token}`);
  await page.getByText('Your e-mail bo@bo.dev is verified.').waitFor();
  assert.equal(await emailVerified('bo@bo.dev'), true);
  await page.goto(`${svc.address}/`);
  await page.getByText(/^Signed in as bo@bo\.dev/).waitFor();
  assert.equal(await page.getByRole('button', { name: 'Send a new verification link' }).isVisible(), false, 'verified: nothing more to ask');
  assert.deepEqual(problems, []);
});

test('a ?token= that is a dot segment is an invalid link on the page, never a path to another API route', async (t) => {
  requireBrowser();
  const svc = await startSvc(t);
  const context = await newContext(t);
  const page = await context.newPage();
  const problems = watch(page);
  const calls: string[] = [];
  page.on('request', (request) => {
    const url = new URL(request.url());
    if (url.pathname.startsWith('/api/')) calls.push(`${request.method()} ${url.pathname}`);
  });

  // encodeURIComponent leaves dots alone, and the URL parser resolves `invites/..` to `/api/v1/`: the lookup of such a
  // "token" asked another route and showed its answer ("No route for GET /api/v1/.", or a 401 about bearer tokens).
  for (const token of ['.', '..', '%2e%2E']) {
    await page.goto(`${svc.address}/accept-invite?token=${token}`);
    await page.locator('[role="alert"]').filter({ hasText: /\S/ }).waitFor();
    assert.equal(await text(page, '[role="alert"]'), 'This invitation link is not valid. Check that the whole link was opened, or ask for a new invitation.', token);
    assert.equal(await text(page, '#title'), 'This invitation cannot be used', token);

    await page.goto(`${svc.address}/verify-email?token=${token}`);
    await page.locator('[role="alert"]').filter({ hasText: /\S/ }).waitFor();
    assert.match(await text(page, '[role="alert"]'), /^This verification link is not valid any more/, token);
  }
  const elsewhere = calls.filter((call) => !/^GET \/api\/v1\/(invites|auth\/verify)\/[^/]+$/.test(call));
  assert.deepEqual(elsewhere, [], 'every call the pages made was the lookup of a token');
  assert.deepEqual(problems, []);
});

test('an existing account signed in as someone else, then with a session that ends, is told each time how to accept', async (t) => {
  requireBrowser();
  const svc = await startSvc(t, { SVC_ALLOW_PUBLIC_SIGNUP: 'true' });
  const email = 'ada@acme.io';
  const other = 'eve@eve.dev';
  await signUp(svc, email, 'Ada');
  await signUp(svc, other, 'Eve');
  assert.equal((await svc.admin('POST', '/orgs/active/invites', { email, role: 'member' })).status, 201);
  const invite = await linkToken(svc, email, '/accept-invite');

  const context = await newContext(t);
  const page = await context.newPage();
  const problems = watch(page);
  await page.goto(`${svc.address}/login`);
  await signIn(page, other, FIRST_PASSWORD);
  await page.getByRole('heading', { name: 'Signed in' }).waitFor();

  // Signed in as Eve, the page says to sign out first, and still does after svc refuses Eve's acceptance: not "Sign in
  // with it first", as if nobody were signed in.
  await page.goto(`${svc.address}/accept-invite?token=${invite.token}`);
  const wrongUser = `There is already an account for ${email}, but you are signed in as ${other}. Sign out, then sign in as ${email}.`;
  await page.getByText(wrongUser).waitFor();
  await page.getByRole('button', { name: 'Accept the invitation' }).click();
  await page.locator('[role="alert"]').filter({ hasText: /\S/ }).waitFor();
  assert.equal(await text(page, '[role="alert"]'), 'Sign in as the invited user to accept this invitation.');
  assert.equal(await page.locator('#existing-explain').innerText(), wrongUser);

  // Its link: sign out on /login, sign in as Ada, and back to the same invitation.
  await page.getByRole('link', { name: `Sign in as ${email}` }).click();
  await page.getByRole('button', { name: 'Sign out' }).click();
  await signIn(page, email, FIRST_PASSWORD);
  await page.waitForURL(`${svc.address}/accept-invite`);
  await page.getByText(`You are signed in as ${email}.`).waitFor();
  assert.equal(await page.locator('#sign-in-link').isVisible(), false, 'signed in as the invitee: no sign-in link');

  await endSession(context, svc);

  await page.getByRole('button', { name: 'Accept the invitation' }).click();
  await page.locator('[role="alert"]').filter({ hasText: /\S/ }).waitFor();
  assert.equal(await text(page, '[role="alert"]'), 'Sign in as the invited user to accept this invitation.');
  assert.equal(await page.locator('#sign-in-link').isVisible(), true, 'the way to sign in is on the page');
  assert.equal(await page.locator('#existing-explain').innerText(), `There is already an account for ${email}. Sign in with it first.`);
  assert.deepEqual(problems, []);
});

test('names and addresses holding markup show as text on every page that echoes them: nothing is parsed or run', async (t) => {
  requireBrowser();
  const svc = await startSvc(t, { SVC_ALLOW_PUBLIC_SIGNUP: 'true' });
  // All three pass svc's name and address rules (no control characters, no bidirectional overrides).
  const org = '<script>alert(1)</script>"><img src=x onerror=alert(2)></title>';
  const email = "'><img/src=x/onerror=alert(3)>@evil.example"; // a quoted local part is refused (docs/accounts.md)
  const name = '<img src=x onerror=alert(4)>';
  assert.equal((await svc.admin('PATCH', '/orgs/active', { name: org })).status, 200);
  assert.equal((await svc.admin('POST', '/orgs/active/invites', { email, role: 'member' })).status, 201);
  const invite = await linkToken(svc, email, '/accept-invite');

  const context = await newContext(t);
  const page = await context.newPage();
  const problems = watch(page);
  page.on('dialog', (dialog) => {
    problems.push(`dialog: ${dialog.message()}`);
    return dialog.dismiss();
  });
  // Markup that became elements shows as an img, or a script beyond the page's one module.
  const injected = async (where: string) => {
    assert.equal(await page.locator('img, svg').count(), 0, `${where}: an element from a value`);
    assert.equal(await page.locator('script').count(), 1, `${where}: a script from a value`);
  };

  await page.goto(`${svc.address}/accept-invite?token=${invite.token}`);
  await page.getByRole('button', { name: 'Create account and join' }).waitFor();
  assert.equal(await text(page, '#title'), `Join ${org}`);
  assert.equal(await text(page, '#invite-email'), email);
  await injected('/accept-invite');
  await page.getByLabel('Your name').fill(name);
  await page.getByLabel('Password', { exact: true }).fill(FIRST_PASSWORD);
  await page.getByLabel('Repeat the password').fill(FIRST_PASSWORD);
  await page.getByRole('button', { name: 'Create account and join' }).click();
  await page.getByRole('heading', { name: 'Welcome' }).waitFor();
  assert.equal(await text(page, '#done-text'), `You joined ${org}.`);
  await injected('/accept-invite, joined');

  for (const path of ['/', '/login']) {
    await page.goto(`${svc.address}${path}`);
    await page.locator('#signed-in-as').filter({ hasText: /\S/ }).waitFor();
    assert.equal(await text(page, '#signed-in-as'), `Signed in as ${email} in ${org}.`, path);
    await injected(path);
  }

  // A signup's address, on /verify-email.
  const signer = "'onmouseover=alert(5)'@evil.example";
  await signUp(svc, signer, name);
  const verify = await linkToken(svc, signer, '/verify-email');
  await page.goto(`${svc.address}/verify-email?token=${verify.token}`);
  await page.getByRole('heading', { name: 'E-mail verified' }).waitFor();
  assert.equal(await text(page, '#status'), `Your e-mail ${signer} is verified.`);
  await injected('/verify-email');
  assert.deepEqual(problems, []);
});

test('at phone width a long organization name and address wrap inside the page instead of widening it', async (t) => {
  requireBrowser();
  const svc = await startSvc(t);
  // The longest names svc accepts, without a space to break at: 100 characters of organization, a 254-character address.
  const org = 'O'.repeat(100);
  const email = `${'a'.repeat(64)}@${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(57)}.io`;
  assert.equal((await svc.admin('PATCH', '/orgs/active', { name: org })).status, 200);
  assert.equal((await svc.admin('POST', '/users', { email, tempPassword: FIRST_PASSWORD })).status, 201);

  const context = await newContext(t, { viewport: { width: 360, height: 740 } });
  const page = await context.newPage();
  const problems = watch(page);
  const pageWidth = () => page.evaluate<number>('document.documentElement.scrollWidth');

  await page.goto(`${svc.address}/login`);
  await signIn(page, email, FIRST_PASSWORD);
  await page.getByRole('heading', { name: 'Choose a new password' }).waitFor();
  await page.getByLabel('Current password').fill(FIRST_PASSWORD);
  await page.getByLabel('New password', { exact: true }).fill(SECOND_PASSWORD);
  await page.getByLabel('Repeat the new password').fill(SECOND_PASSWORD);
  await page.getByRole('button', { name: 'Change password' }).click();
  await page.getByRole('heading', { name: 'Signed in' }).waitFor();
  assert.equal(await text(page, '#signed-in-as'), `Signed in as ${email} in ${org}.`);
  assert.equal(await pageWidth(), 360, '/login signed in: no sideways scrolling');
  await page.goto(`${svc.address}/`);
  await page.locator('#signed-in-as').filter({ hasText: /\S/ }).waitFor();
  assert.equal(await text(page, '#signed-in-as'), `Signed in as ${email} in ${org}.`);
  assert.equal(await pageWidth(), 360, '/ signed in: no sideways scrolling');

  assert.equal((await svc.admin('POST', '/orgs/active/invites', { email: `${'e'.repeat(64)}@example.com`, role: 'member' })).status, 201);
  const invite = await linkToken(svc, `${'e'.repeat(64)}@example.com`, '/accept-invite');
  await page.goto(`${svc.address}/accept-invite?token=${invite.token}`);
  await page.getByRole('heading', { name: `Join ${org}` }).waitFor();
  assert.equal(await pageWidth(), 360, '/accept-invite: no sideways scrolling');
  assert.deepEqual(problems, []);
});
