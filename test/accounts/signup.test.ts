/** Signup with trial, verification, password recovery (SPEC 3, 4.4, 4.5, 7, 8; docs/accounts.md). */
import assert from 'node:assert/strict';
import test from 'node:test';
import { json } from '../support/build.ts';
import { ADMIN, Browser, buildAccounts, buildWithAdmin, makeUser, ORIGIN, sessionCookieOf } from '../support/accounts.ts';
import { tempDir } from '../support/process.ts';
import { createPasswordHasher } from '../../src/accounts/passwords.ts';
import { newToken, sha256Hex } from '../../src/core/ids.ts';
import { MIGRATIONS } from '../../src/store/migrations.ts';
import { openStore } from '../../src/store/store.ts';

const SIGNUP = { email: 'Ada@Acme.io', name: 'Ada', password: 'ada-password-1' };
const DAY = 86_400_000;

test('signup is 403 while SVC_ALLOW_PUBLIC_SIGNUP is off, and stores nothing', async (t) => {
  const { app, services } = await buildAccounts(t);
  const response = await app.inject({ method: 'POST', url: '/api/v1/auth/signup', headers: { origin: ORIGIN }, payload: SIGNUP });
  assert.equal(response.statusCode, 403);
  assert.equal(json(response).error.code, 'signup_disabled');
  assert.equal((await services.store.read((sql) => sql.all('SELECT * FROM users'))).length, 0);
  assert.equal(json(await app.inject({ url: '/health' })).publicSignup, false);
});

test('signup: user, org named from the domain, owner, 30-day trial that applies once verified, signed in', async (t) => {
  const { app, mail, clock, services } = await buildAccounts(t, { env: { SVC_ALLOW_PUBLIC_SIGNUP: 'true' } });
  const ada = new Browser(app);
  const response = await ada.post('/api/v1/auth/signup', SIGNUP);
  assert.equal(response.statusCode, 201, response.body);
  const me = json(response);
  assert.equal(me.user.email, 'ada@acme.io');
  assert.equal(me.user.emailVerified, false);
  assert.equal(me.user.role, 'member');
  assert.equal(me.org.name, 'acme.io');
  assert.equal(me.org.role, 'owner');
  assert.ok(sessionCookieOf(response));
  const health = json(await app.inject({ url: '/health' }));
  assert.deepEqual(health.selfServeTrial, { enabled: true, days: 30, plan: 'pro' });

  // Trial clock runs, but the effective plan stays Free until the owner verifies.
  const before = json(await ada.get('/api/v1/orgs/active')).org.plan;
  assert.equal(before.effective, 'free');
  assert.equal(before.trial.plan, 'pro');
  assert.equal(before.trial.awaitingVerification, true);
  assert.equal(Date.parse(before.trial.endsAt) - Date.parse(before.trial.startedAt), 30 * DAY);

  clock.advance(3 * DAY);
  await ada.login('ada@acme.io', SIGNUP.password); // the idle limit is 7 days; stay fresh
  const token = mail.token('ada@acme.io', '/verify-email');
  assert.match(mail.last('ada@acme.io').text, /https:\/\/app\.example\.test\/verify-email\?token=/);
  const verified = await app.inject({ url: `/api/v1/auth/verify/${token}` });
  assert.equal(verified.statusCode, 200);
  assert.deepEqual(json(verified), { verified: true, email: 'ada@acme.io' });
  assert.equal(verified.headers['referrer-policy'], 'no-referrer');
  // Single use.
  assert.equal(json(await app.inject({ url: `/api/v1/auth/verify/${token}` })).error.code, 'invalid_token');

  const after = json(await ada.get('/api/v1/orgs/active')).org.plan;
  assert.equal(after.effective, 'pro');
  assert.equal(after.trial.active, true);
  assert.equal(after.trial.startedAt, before.trial.startedAt); // the clock never restarts
  clock.advance(28 * DAY);
  await ada.login('ada@acme.io', SIGNUP.password);
  assert.equal(json(await ada.get('/api/v1/orgs/active')).org.plan.effective, 'free');

  const actions = await services.store.read((sql) => sql.all<{ action: string }>("SELECT action FROM audit_events WHERE action LIKE 'user.%' ORDER BY created_at"));
  assert.deepEqual(actions.map((a) => a.action), ['user.signup', 'user.verify']);
});

test('an address that reads like another is refused: invisible characters, compatibility and decomposed forms', async (t) => {
  const { app, services } = await buildWithAdmin(t, { SVC_ALLOW_PUBLIC_SIGNUP: 'true' });
  const taken = await new Browser(app, '198.51.100.20').post('/api/v1/auth/signup', { email: 'víctor@acme.io', name: 'Victor', password: 'victor-password' });
  assert.equal(taken.statusCode, 201, taken.body);
  const lookalikes = [
    'v\u00edc\u200btor@acme.io', // zero-width space
    'v\u00edctor\u00ad@acme.io', // soft hyphen
    'v\u00edctor@acme.io\u200e', // left-to-right mark
    'v\u00edctor\ufe0f@acme.io', // variation selector
    'vi\u0301ctor@acme.io', // decomposed
    'v\u00edctor@\uff41cme.io', // fullwidth a
  ];
  const users = () => services.store.read((sql) => sql.get<{ n: number }>('SELECT COUNT(*) AS n FROM users')!.n);
  const before = await users();
  const admin = new Browser(app, '198.51.100.21');
  await admin.login(ADMIN.email, ADMIN.password);
  for (const email of lookalikes) {
    const signup = await new Browser(app, `198.51.100.${30 + lookalikes.indexOf(email)}`).post('/api/v1/auth/signup', { email, name: 'Mallory', password: 'mallory-password' });
    assert.equal(signup.statusCode, 400, `signup ${JSON.stringify(email)}: ${signup.body}`);
    assert.equal(json(signup).error.code, 'invalid_request');
    assert.equal((await admin.post('/api/v1/users', { email })).statusCode, 400, `create ${JSON.stringify(email)}`);
    assert.equal((await admin.post('/api/v1/orgs/active/invites', { email })).statusCode, 400, `invite ${JSON.stringify(email)}`);
  }
  assert.equal(await users(), before, 'no look-alike account was made');
  // Addresses beyond ASCII in their one normal form are kept as sent.
  assert.equal((await admin.post('/api/v1/users', { email: '山田@例え.jp' })).statusCode, 201);
});

test('an address whose domain is another spelling of a taken one is refused: trailing dot, empty label, ideographic dot', async (t) => {
  const { app, services } = await buildWithAdmin(t, { SVC_ALLOW_PUBLIC_SIGNUP: 'true' });
  const taken = await new Browser(app, '198.51.100.60').post('/api/v1/auth/signup', { email: 'ceo@acme.io', name: 'Ceo', password: 'ceo-password-1' });
  assert.equal(taken.statusCode, 201, taken.body);
  // The fully qualified form and IDNA's ideographic label separator are acme.io spelled otherwise; empty labels are
  // no domain of their own: each would be a second account (and organization `acme.io.`) beside ceo@acme.io.
  const sameMailbox = ['ceo@acme.io.', 'ceo@acme..io', 'ceo@.acme.io', 'ceo@acme\u3002io'];
  const users = () => services.store.read((sql) => sql.get<{ n: number }>('SELECT COUNT(*) AS n FROM users')!.n);
  const before = await users();
  const admin = new Browser(app, '198.51.100.61');
  await admin.login(ADMIN.email, ADMIN.password);
  for (const [index, email] of sameMailbox.entries()) {
    const signup = await new Browser(app, `198.51.100.${70 + index}`).post('/api/v1/auth/signup', { email, name: 'Mallory', password: 'mallory-password' });
    assert.equal(signup.statusCode, 400, `signup ${JSON.stringify(email)}: ${signup.body}`);
    assert.equal(json(signup).error.code, 'invalid_request');
    assert.equal((await admin.post('/api/v1/users', { email })).statusCode, 400, `create ${JSON.stringify(email)}`);
    assert.equal((await admin.post('/api/v1/orgs/active/invites', { email })).statusCode, 400, `invite ${JSON.stringify(email)}`);
  }
  assert.equal(await users(), before, 'no second account for the mailbox was made');
  // Dots inside the local part are the mailbox's own business and stay allowed.
  assert.equal((await admin.post('/api/v1/users', { email: 'c.e.o.@acme.io' })).statusCode, 201);
});

test('a quoted local part or a backslash is refused: "ceo"@acme.io is the mailbox of ceo@acme.io spelled otherwise', async (t) => {
  const { app, services, mail } = await buildWithAdmin(t, { SVC_ALLOW_PUBLIC_SIGNUP: 'true' });
  const taken = await new Browser(app, '198.51.100.80').post('/api/v1/auth/signup', { email: 'ceo@acme.io', name: 'Ceo', password: 'ceo-password-1' });
  assert.equal(taken.statusCode, 201, taken.body);
  // RFC 5322 3.2.4: a quoted string is the same as the atom it quotes, and a quoted pair (\e) the character it quotes,
  // so each reaches ceo@acme.io's mailbox, yet compared as text each would be an account of its own.
  const sameMailbox = ['"ceo"@acme.io', '"CEO"@acme.io', '"c\\eo"@acme.io', 'c\\eo@acme.io', '"ceo@acme.io'];
  const count = (table: string) => services.store.read((sql) => sql.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${table}`)!.n);
  const before = { users: await count('users'), invites: await count('org_invites'), mail: mail.sent.length };
  const admin = new Browser(app, '198.51.100.81');
  await admin.login(ADMIN.email, ADMIN.password);
  for (const [index, email] of sameMailbox.entries()) {
    const signup = await new Browser(app, `198.51.100.${90 + index}`).post('/api/v1/auth/signup', { email, name: 'Mallory', password: 'mallory-password' });
    assert.equal(signup.statusCode, 400, `signup ${JSON.stringify(email)}: ${signup.body}`);
    assert.deepEqual(json(signup).error.details.issues, [{ path: 'email', message: 'the local part must not be quoted or hold a backslash' }]);
    assert.equal((await admin.post('/api/v1/users', { email })).statusCode, 400, `create ${JSON.stringify(email)}`);
    assert.equal((await admin.post('/api/v1/orgs/active/invites', { email })).statusCode, 400, `invite ${JSON.stringify(email)}`);
  }
  assert.deepEqual({ users: await count('users'), invites: await count('org_invites'), mail: mail.sent.length }, before, 'no second account, invitation or e-mail');
  // The other characters RFC 5322 allows unquoted stay allowed.
  assert.equal((await admin.post('/api/v1/users', { email: "o'brien+svc=1!#$%&*/?^_`{|}~-@acme.io" })).statusCode, 201);
});

test('an address holding a comma or a semicolon is refused: a provider or mail client splitting the list would reach two mailboxes', async (t) => {
  const { app, services, mail } = await buildWithAdmin(t, { SVC_ALLOW_PUBLIC_SIGNUP: 'true' });
  const count = (table: string) => services.store.read((sql) => sql.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${table}`)!.n);
  const before = { users: await count('users'), invites: await count('org_invites'), mail: mail.sent.length };
  const admin = new Browser(app, '198.51.100.81');
  await admin.login(ADMIN.email, ADMIN.password);
  for (const [index, email] of ['x,victim@acme.io', 'x;victim@acme.io', 'x@acme.io,victim'].entries()) {
    const signup = await new Browser(app, `198.51.100.${100 + index}`).post('/api/v1/auth/signup', { email, name: 'Mallory', password: 'mallory-password' });
    assert.equal(signup.statusCode, 400, `signup ${email}: ${signup.body}`);
    assert.ok(json(signup).error.details.issues.some((issue: { message: string }) => issue.message === 'must not hold a comma or a semicolon'), signup.body);
    assert.equal((await admin.post('/api/v1/users', { email })).statusCode, 400, `create ${email}`);
    assert.equal((await admin.post('/api/v1/orgs/active/invites', { email })).statusCode, 400, `invite ${email}`);
  }
  assert.deepEqual({ users: await count('users'), invites: await count('org_invites'), mail: mail.sent.length }, before, 'no account, invitation or e-mail');
});

test("an internationalized domain is one mailbox in its Unicode and ASCII spellings: one account, reached by either", async (t) => {
  const { app, mail, services } = await buildWithAdmin(t, { SVC_ALLOW_PUBLIC_SIGNUP: 'true' });
  const ceo = await new Browser(app, '198.51.100.80').post('/api/v1/auth/signup', { email: 'ceo@例え.jp', name: 'Ceo', password: 'ceo-password-1' });
  assert.equal(ceo.statusCode, 201, ceo.body);
  const id = json(ceo).user.id;
  assert.equal(json(ceo).org.name, '例え.jp');
  // xn--r8jz45g.jp is 例え.jp in the ASCII form mail servers use (UTS 46): the same mailbox, so no second account.
  const users = () => services.store.read((sql) => sql.get<{ n: number }>('SELECT COUNT(*) AS n FROM users')!.n);
  const before = await users();
  const admin = new Browser(app, '198.51.100.81');
  await admin.login(ADMIN.email, ADMIN.password);
  for (const [index, email] of ['ceo@xn--r8jz45g.jp', ' CEO@XN--R8JZ45G.JP '].entries()) {
    const signup = await new Browser(app, `198.51.100.${90 + index}`).post('/api/v1/auth/signup', { email, name: 'Mallory', password: 'mallory-password' });
    assert.equal(signup.statusCode, 409, `signup ${email}: ${signup.body}`);
    assert.equal(json(signup).error.code, 'email_taken');
    assert.equal(json(await admin.post('/api/v1/users', { email })).error.code, 'email_taken', `create ${email}`);
  }
  assert.equal(await users(), before, 'no second account for the mailbox was made');
  // An invitation to either spelling is one to the account's address.
  const invite = await admin.post('/api/v1/orgs/active/invites', { email: 'ceo@xn--r8jz45g.jp' });
  assert.equal(invite.statusCode, 201, invite.body);
  assert.equal(json(invite).invite.email, 'ceo@例え.jp');
  // Login and password reset with either spelling reach the one account.
  for (const [index, email] of ['ceo@例え.jp', 'ceo@xn--r8jz45g.jp'].entries()) {
    assert.equal((await new Browser(app, `198.51.100.${100 + index}`).login(email, 'ceo-password-1')).user.id, id, `login ${email}`);
  }
  const reset = await app.inject({ method: 'POST', url: '/api/v1/auth/password-reset/request', remoteAddress: '198.51.100.110', headers: { origin: ORIGIN }, payload: { email: 'ceo@xn--r8jz45g.jp' } });
  assert.equal(reset.statusCode, 202);
  await new Promise((resolve) => setTimeout(resolve, 10));
  const token = mail.token('ceo@例え.jp', '/reset-password');
  assert.equal((await new Browser(app, '198.51.100.111').post('/api/v1/auth/password-reset/confirm', { token, password: 'ceo-password-2' })).statusCode, 200);
  assert.equal((await new Browser(app, '198.51.100.112').login('ceo@xn--r8jz45g.jp', 'ceo-password-2')).user.id, id);

  // Given first in its ASCII form, the address is stored (and the organization named) in the form users read.
  const boss = await new Browser(app, '198.51.100.113').post('/api/v1/auth/signup', { email: 'boss@xn--wgv71a.jp', name: 'Boss', password: 'boss-password-1' });
  assert.equal(boss.statusCode, 201, boss.body);
  assert.equal(json(boss).user.email, 'boss@日本.jp');
  assert.equal(json(boss).org.name, '日本.jp');
  assert.equal(json(await new Browser(app, '198.51.100.114').post('/api/v1/auth/signup', { email: 'boss@日本.jp', name: 'M', password: 'mallory-password' })).error.code, 'email_taken');
});

test('migration 16 stores the addresses of an older data file with the domain in its Unicode form, but leaves two accounts of one mailbox alone', async (t) => {
  const dataDir = tempDir(t);
  const older = openStore({ dataDir, migrations: MIGRATIONS.filter((migration) => migration.version < 16) });
  const hash = await createPasswordHasher({ costLog2: 10 }).hash('old-password-1');
  const resetToken = newToken();
  const inviteToken = newToken();
  const later = Date.UTC(2026, 10, 30);
  await older.write((sql) => {
    sql.run("INSERT INTO tenants (id, name, created_at) VALUES ('org_old', 'Old', 1)");
    const user = (id: string, email: string) =>
      sql.run(
        `INSERT INTO users (id, email, name, role, email_verified, must_change_password, password_hash, password_changed_at, created_at, updated_at)
         VALUES (?, ?, 'Old', 'member', 1, 0, ?, 1, 1, 1)`,
        [id, email, hash],
      );
    user('usr_old', 'old@xn--r8jz45g.jp');
    user('usr_mixed', 'mixed@例え.xn--wgv71a');
    // Two accounts of one mailbox, made before svc told the spellings apart: neither is chosen over the other.
    user('usr_twin_ace', 'twin@xn--r8jz45g.jp');
    user('usr_twin_unicode', 'twin@例え.jp');
    sql.run(
      "INSERT INTO account_tokens (token_hash, kind, user_id, email, created_at, expires_at) VALUES (?, 'password_reset', 'usr_old', 'old@xn--r8jz45g.jp', 1, ?)",
      [sha256Hex(resetToken), later],
    );
    sql.run(
      `INSERT INTO org_invites (id, tenant_id, email, role, token_hash, invited_by, status, created_at, expires_at)
       VALUES ('inv_old', 'org_old', 'guest@xn--r8jz45g.jp', 'member', ?, NULL, 'pending', 1, ?)`,
      [sha256Hex(inviteToken), later],
    );
  });
  await older.close();

  const { app, services } = await buildAccounts(t, { dataDir });
  const emails = Object.fromEntries(
    (await services.store.read((sql) => sql.all<{ id: string; email: string }>('SELECT id, email FROM users'))).map((row) => [row.id, row.email]),
  );
  assert.equal(emails.usr_old, 'old@例え.jp');
  assert.equal(emails.usr_mixed, 'mixed@例え.日本');
  assert.equal(emails.usr_twin_ace, 'twin@xn--r8jz45g.jp');
  assert.equal(emails.usr_twin_unicode, 'twin@例え.jp');
  // Either spelling now reaches the account stored in the mailbox's form.
  assert.equal((await new Browser(app, '198.51.100.145').login('twin@xn--r8jz45g.jp', 'old-password-1')).user.id, 'usr_twin_unicode');
  for (const [index, email] of ['old@例え.jp', 'old@xn--r8jz45g.jp'].entries()) {
    assert.equal((await new Browser(app, `198.51.100.${140 + index}`).login(email, 'old-password-1')).user.id, 'usr_old', `login ${email}`);
  }
  // The reset link sent to the address before still works: the token names the address as the account now has it.
  const reset = await new Browser(app, '198.51.100.150').post('/api/v1/auth/password-reset/confirm', { token: resetToken, password: 'old-password-2' });
  assert.equal(reset.statusCode, 200, reset.body);
  // The invitation names the address as accounts are looked up.
  assert.equal(json(await app.inject({ url: `/api/v1/invites/${inviteToken}` })).email, 'guest@例え.jp');
});

test('an address whose domain does not convert under IDNA (UTS 46) is refused', async (t) => {
  const { app, services } = await buildWithAdmin(t, { SVC_ALLOW_PUBLIC_SIGNUP: 'true' });
  const admin = new Browser(app, '198.51.100.120');
  await admin.login(ADMIN.email, ADMIN.password);
  const users = () => services.store.read((sql) => sql.get<{ n: number }>('SELECT COUNT(*) AS n FROM users')!.n);
  const before = await users();
  // Invalid punycode; an ACE label that decodes to plain ASCII (xn--r8jz45g-.jp reads back as r8jz45g.jp); a
  // percent-escape and a shortened IPv4 number, which a host parser rewrites into another domain.
  // And an address of 130 characters whose ASCII form, the one mail servers hold to 254 (RFC 5321), has 388.
  const longLabel = '日本語例え漢字仮名東京大阪京都名古屋札幌';
  const broken = ['ceo@xn--zz.jp', 'ceo@xn--a.com', 'ceo@xn--r8jz45g-.jp', 'ceo@a%41.com', 'ceo@1.2.3', `a@${Array(6).fill(longLabel).join('.')}.jp`];
  for (const [index, email] of broken.entries()) {
    const signup = await new Browser(app, `198.51.100.${130 + index}`).post('/api/v1/auth/signup', { email, name: 'Mallory', password: 'mallory-password' });
    assert.equal(signup.statusCode, 400, `signup ${email}: ${signup.body}`);
    assert.equal(json(signup).error.code, 'invalid_request');
    assert.equal((await admin.post('/api/v1/users', { email })).statusCode, 400, `create ${email}`);
    assert.equal((await admin.post('/api/v1/orgs/active/invites', { email })).statusCode, 400, `invite ${email}`);
  }
  assert.equal(await users(), before);
});

test('signup: generic providers name the org after the person; duplicates 409; unknown fields 400; per-address limit', async (t) => {
  const { app } = await buildAccounts(t, { env: { SVC_ALLOW_PUBLIC_SIGNUP: 'true' } });
  const grace = await new Browser(app, '198.51.100.1').post('/api/v1/auth/signup', { email: 'grace@gmail.com', name: 'Grace', password: 'grace-password' });
  assert.equal(json(grace).org.name, "Grace's org");
  const dup = await new Browser(app, '198.51.100.2').post('/api/v1/auth/signup', { email: 'GRACE@gmail.com', name: 'G', password: 'another-password' });
  assert.equal(dup.statusCode, 409);
  assert.equal(json(dup).error.code, 'email_taken');
  assert.equal(dup.headers['set-cookie'], undefined);
  for (const extra of [{ role: 'admin' }, { emailVerified: true }, { orgId: 'default' }]) {
    const response = await new Browser(app, '198.51.100.3').post('/api/v1/auth/signup', { ...SIGNUP, email: 'x@x.test', ...extra });
    assert.equal(response.statusCode, 400);
  }
  const statuses: number[] = [];
  for (let i = 0; i < 6; i++) {
    statuses.push((await new Browser(app, '198.51.100.9').post('/api/v1/auth/signup', { email: `s${i}@corp.test`, name: 'S', password: 'some-password' })).statusCode);
  }
  assert.deepEqual(statuses, [201, 201, 201, 201, 201, 429]);
});

test('a stranger learns only that an address has an account, never where: signup, user creation, invitation', async (t) => {
  const { app } = await buildAccounts(t, { env: { SVC_ALLOW_PUBLIC_SIGNUP: 'true' } });
  assert.equal((await new Browser(app, '198.51.100.80').post('/api/v1/auth/signup', { email: 'bob@bobcorp.test', name: 'Bob', password: 'bob-password-1' })).statusCode, 201);
  const eve = new Browser(app, '198.51.100.81');
  assert.equal((await eve.post('/api/v1/auth/signup', { email: 'eve@evil.test', name: 'Eve', password: 'eve-password-1' })).statusCode, 201);

  const signup = await new Browser(app, '198.51.100.82').post('/api/v1/auth/signup', { email: 'Bob@BobCorp.test', name: 'B', password: 'bob-password-2' });
  const created = await eve.post('/api/v1/users', { email: 'bob@bobcorp.test' });
  for (const answer of [signup, created]) {
    assert.equal(answer.statusCode, 409);
    assert.deepEqual(Object.keys(json(answer).error).sort(), ['code', 'message'], 'no details');
    assert.equal(json(answer).error.code, 'email_taken');
    assert.doesNotMatch(answer.body, /bobcorp\.test|Bob|org_|owner/, 'nothing about where the account is');
  }
  // An invitation to that address answers as one to an address without an account.
  const known = json(await eve.post('/api/v1/orgs/active/invites', { email: 'bob@bobcorp.test' })).invite;
  const unknown = json(await eve.post('/api/v1/orgs/active/invites', { email: 'nobody@bobcorp.test' })).invite;
  const shape = (invite: Record<string, unknown>) => ({ ...invite, id: null, email: null });
  assert.deepEqual(shape(known), shape(unknown));
  assert.deepEqual(json(await eve.get('/api/v1/users?email=bob@bobcorp.test')).users, [], 'the user list is the organization\'s');
});

test('a signup whose verification e-mail fails still succeeds; resend sends only to the stored address, 3 deliveries per 15 minutes', async (t) => {
  const { app, mail, clock } = await buildAccounts(t, { env: { SVC_ALLOW_PUBLIC_SIGNUP: 'true' } });
  mail.failing = true;
  const ada = new Browser(app);
  assert.equal((await ada.post('/api/v1/auth/signup', SIGNUP)).statusCode, 201);
  mail.failing = false;
  assert.equal(mail.sent.length, 0);

  // A failing resend removes its new token and answers 503.
  mail.failing = true;
  const failed = await ada.post('/api/v1/auth/verification/resend', { email: 'attacker@evil.test' });
  assert.equal(failed.statusCode, 400); // the body takes no fields: the address is never the caller's to choose
  const failing = await ada.post('/api/v1/auth/verification/resend');
  assert.equal(failing.statusCode, 503);
  assert.equal(json(failing).error.code, 'email_delivery_failed');
  mail.failing = false;

  const first = await ada.post('/api/v1/auth/verification/resend');
  assert.equal(first.statusCode, 202);
  const firstToken = mail.token('ada@acme.io', '/verify-email');
  assert.equal((await ada.post('/api/v1/auth/verification/resend')).statusCode, 202);
  // The failed attempt delivered nothing, so it is not one of the 3.
  assert.equal((await ada.post('/api/v1/auth/verification/resend')).statusCode, 202);
  const limited = await ada.post('/api/v1/auth/verification/resend');
  assert.equal(limited.statusCode, 429);
  assert.ok(Number(limited.headers['retry-after']) > 0);
  assert.ok(mail.sent.every((m) => m.to === 'ada@acme.io'));
  // The newest token replaced the older ones.
  assert.equal((await app.inject({ url: `/api/v1/auth/verify/${firstToken}` })).statusCode, 400);
  const latest = mail.token('ada@acme.io', '/verify-email');
  assert.equal((await app.inject({ url: `/api/v1/auth/verify/${latest}` })).statusCode, 200);
  clock.advance(15 * 60_000);
  assert.equal(json(await ada.post('/api/v1/auth/verification/resend')).error.code, 'already_verified');
});

test("two resends at once: exactly one of the links e-mailed works, and the signup's is replaced", async (t) => {
  const { app, mail } = await buildAccounts(t, { env: { SVC_ALLOW_PUBLIC_SIGNUP: 'true' } });
  for (let round = 0; round < 10; round++) {
    const email = `ada${round}@acme${round}.io`;
    const ada = new Browser(app, `198.51.100.${round + 1}`);
    assert.equal((await ada.post('/api/v1/auth/signup', { ...SIGNUP, email })).statusCode, 201);
    const signupToken = mail.token(email, '/verify-email');
    // Sent together: both tokens are made before either delivery ends and replaces the older ones.
    const resends = await Promise.all([ada.post('/api/v1/auth/verification/resend'), ada.post('/api/v1/auth/verification/resend')]);
    assert.deepEqual(resends.map((r) => r.statusCode), [202, 202]);
    const mailed = mail.sent.filter((m) => m.to === email).map((m) => /verify-email\?token=([A-Za-z0-9_-]+)/.exec(m.text)![1]!);
    assert.equal(mailed.length, 3);
    assert.equal(mailed[0], signupToken);
    const verified = [];
    for (const token of mailed) verified.push((await app.inject({ url: `/api/v1/auth/verify/${token}` })).statusCode);
    // Each resend deleting every token but its own left none: both links e-mailed were dead, the address unverifiable.
    assert.deepEqual(verified.slice(0, 1), [400], `round ${round}: the signup's link was replaced`);
    assert.equal(verified.filter((status) => status === 200).length, 1, `round ${round}: ${verified.join(',')}`);
  }
});

test('verification links expire after 7 days', async (t) => {
  const { app, mail, clock } = await buildAccounts(t, { env: { SVC_ALLOW_PUBLIC_SIGNUP: 'true' } });
  await new Browser(app).post('/api/v1/auth/signup', SIGNUP);
  clock.advance(7 * DAY + 1);
  const response = await app.inject({ url: `/api/v1/auth/verify/${mail.token('ada@acme.io', '/verify-email')}` });
  assert.equal(response.statusCode, 400);
  assert.equal(json(response).error.code, 'invalid_token');
});

test('reset request: same 202, body and no cookie for known and unknown addresses; link from configuration', async (t) => {
  const { app, mail, hasher } = await buildWithAdmin(t);
  const request = (email: string) =>
    app.inject({ method: 'POST', url: '/api/v1/auth/password-reset/request', headers: { origin: ORIGIN, host: 'evil.example' }, payload: { email } });
  const hashesBefore = hasher.calls.hash;
  const t0 = performance.now();
  const known = await request(ADMIN.email);
  const t1 = performance.now();
  const unknown = await request('nobody@example.test');
  const t2 = performance.now();
  assert.equal(known.statusCode, 202);
  assert.equal(unknown.statusCode, 202);
  assert.equal(known.body, unknown.body);
  assert.deepEqual(json(known), { ok: true, message: 'If an account exists for that address, a reset link is on its way.' });
  assert.equal(known.headers['set-cookie'], undefined);
  assert.equal(unknown.headers['set-cookie'], undefined);
  assert.equal(hasher.calls.hash, hashesBefore); // neither path hashes anything
  // The floor (30 ms in tests, 400 ms by default) holds for both.
  assert.ok(t1 - t0 >= 29 && t2 - t1 >= 29);
  await new Promise((resolve) => setTimeout(resolve, 20)); // the e-mail leaves after the answer
  assert.match(mail.last(ADMIN.email).text, /^Choose a new password: https:\/\/app\.example\.test\/reset-password\?token=[A-Za-z0-9_-]{43}$/m);
  assert.equal(mail.sent.filter((m) => m.to === 'nobody@example.test').length, 0);
  assert.ok(!mail.last(ADMIN.email).text.includes('evil.example'));
});

test('reset confirm: new password, mustChangePassword cleared, every session and other link ended; single use; 1 hour', async (t) => {
  const { app, admin, mail, clock } = await buildWithAdmin(t);
  const { browser: ada, id } = await makeUser(app, { email: 'ada@example.test', password: 'old-password' });
  await admin.post(`/api/v1/users/${id}/reset-password`); // sets mustChangePassword
  const requestReset = () =>
    app.inject({ method: 'POST', url: '/api/v1/auth/password-reset/request', remoteAddress: '198.51.100.40', headers: { origin: ORIGIN }, payload: { email: 'ada@example.test' } });
  await requestReset();
  await new Promise((resolve) => setTimeout(resolve, 10));
  const older = mail.token('ada@example.test', '/reset-password');
  await requestReset();
  await new Promise((resolve) => setTimeout(resolve, 10));
  const newer = mail.token('ada@example.test', '/reset-password');
  assert.notEqual(older, newer);
  const session = new Browser(app, '198.51.100.41');

  const weak = await session.post('/api/v1/auth/password-reset/confirm', { token: newer, password: 'short' });
  assert.equal(weak.statusCode, 400);
  const confirmed = await session.post('/api/v1/auth/password-reset/confirm', { token: newer, password: 'brand-new-password' });
  assert.equal(confirmed.statusCode, 200);
  assert.equal(confirmed.headers['set-cookie'], undefined); // it does not sign in
  assert.equal((await ada.get('/api/v1/auth/me')).statusCode, 401);
  const me = await new Browser(app, '198.51.100.42').login('ada@example.test', 'brand-new-password');
  assert.equal(me.mustChangePassword, false);
  for (const token of [newer, older]) {
    const reused = await session.post('/api/v1/auth/password-reset/confirm', { token, password: 'mallory-password' });
    assert.equal(reused.statusCode, 400);
    assert.equal(json(reused).error.code, 'invalid_token');
  }
  // A link older than an hour is refused.
  await app.inject({ method: 'POST', url: '/api/v1/auth/password-reset/request', remoteAddress: '198.51.100.43', headers: { origin: ORIGIN }, payload: { email: 'ada@example.test' } });
  await new Promise((resolve) => setTimeout(resolve, 10));
  const stale = mail.token('ada@example.test', '/reset-password');
  clock.advance(60 * 60_000 + 1);
  assert.equal((await new Browser(app, '198.51.100.44').post('/api/v1/auth/password-reset/confirm', { token: stale, password: 'late-password' })).statusCode, 400);
});

test('a reset link sent before a password change, the user\'s own or an admin\'s reset, no longer works', async (t) => {
  const { app, admin, mail } = await buildWithAdmin(t);
  const { browser: ada, id } = await makeUser(app, { email: 'ada@example.test', password: 'old-password' });
  const linkFor = async (ip: string) => {
    await app.inject({ method: 'POST', url: '/api/v1/auth/password-reset/request', remoteAddress: ip, headers: { origin: ORIGIN }, payload: { email: 'ada@example.test' } });
    await new Promise((resolve) => setTimeout(resolve, 10));
    return mail.token('ada@example.test', '/reset-password');
  };
  const confirm = (token: string) => new Browser(app, '198.51.100.61').post('/api/v1/auth/password-reset/confirm', { token, password: 'mallory-password' });

  const beforeChange = await linkFor('198.51.100.60');
  assert.equal((await ada.post('/api/v1/auth/change-password', { current: 'old-password', new: 'changed-password' })).statusCode, 200);
  assert.equal(json(await confirm(beforeChange)).error.code, 'invalid_token');

  const beforeAdminReset = await linkFor('198.51.100.62');
  assert.equal((await admin.post(`/api/v1/users/${id}/reset-password`)).statusCode, 200);
  assert.equal(json(await confirm(beforeAdminReset)).error.code, 'invalid_token', 'the forced change is not bypassed by an older link');
  // A link asked for afterwards works.
  assert.equal((await confirm(await linkFor('198.51.100.63'))).statusCode, 200);
});

test('password recovery: 5 attempts per minute per address for request and confirm together, X-Forwarded-For ignored', async (t) => {
  const { app } = await buildWithAdmin(t);
  const statuses: number[] = [];
  for (let i = 0; i < 6; i++) {
    const url = i % 2 ? '/api/v1/auth/password-reset/confirm' : '/api/v1/auth/password-reset/request';
    const payload = i % 2 ? { token: 'x'.repeat(43), password: 'whatever-pass' } : { email: `p${i}@example.test` };
    const response = await app.inject({ method: 'POST', url, remoteAddress: '198.51.100.50', headers: { origin: ORIGIN, 'x-forwarded-for': `10.1.${i}.1` }, payload });
    statuses.push(response.statusCode);
  }
  assert.deepEqual(statuses, [202, 400, 202, 400, 202, 429]);
  // The limit answers the same for known and unknown addresses.
  const known = await app.inject({ method: 'POST', url: '/api/v1/auth/password-reset/request', remoteAddress: '198.51.100.50', headers: { origin: ORIGIN }, payload: { email: ADMIN.email } });
  const unknown = await app.inject({ method: 'POST', url: '/api/v1/auth/password-reset/request', remoteAddress: '198.51.100.50', headers: { origin: ORIGIN }, payload: { email: 'no@example.test' } });
  assert.equal(known.statusCode, 429);
  assert.equal(known.body, unknown.body);
});

test('the per-address limits slide: an attempt counts for exactly its window, and retry-after is the wait until the oldest one in it leaves', async (t) => {
  const { app, clock } = await buildAccounts(t);
  const request = () =>
    app.inject({ method: 'POST', url: '/api/v1/auth/password-reset/request', remoteAddress: '198.51.100.52', headers: { origin: ORIGIN }, payload: { email: 'nobody@example.test' } });
  assert.equal((await request()).statusCode, 202);
  clock.advance(30_000);
  for (let i = 0; i < 4; i++) assert.equal((await request()).statusCode, 202);
  const full = await request();
  assert.equal(full.statusCode, 429);
  assert.equal(full.headers['retry-after'], '30');
  assert.deepEqual(json(full), { error: { code: 'rate_limited', message: 'Too many attempts. Retry after 30 s.' } });
  clock.advance(29_999);
  assert.equal((await request()).statusCode, 429, 'the first attempt is in the window until a minute has passed');
  // A minute after the first attempt it leaves the window, and one more fits; the four of 30 s later still count
  // (a fixed window begun with the first attempt would have room for five).
  clock.advance(1);
  assert.equal((await request()).statusCode, 202);
  const again = await request();
  assert.equal(again.statusCode, 429);
  assert.equal(again.headers['retry-after'], '30');
});

test('the per-address limits survive a restart: they are counted in the data file (SPEC 8)', async (t) => {
  const dataDir = tempDir(t);
  const request = (app: Awaited<ReturnType<typeof buildAccounts>>['app']) =>
    app.inject({ method: 'POST', url: '/api/v1/auth/password-reset/request', remoteAddress: '198.51.100.53', headers: { origin: ORIGIN }, payload: { email: 'nobody@example.test' } });
  const before = await buildAccounts(t, { dataDir });
  for (let i = 0; i < 5; i++) assert.equal((await request(before.app)).statusCode, 202);
  await before.app.close();
  await before.services.store.close();
  const after = await buildAccounts(t, { dataDir });
  const refused = await request(after.app);
  assert.equal(refused.statusCode, 429);
  assert.equal(refused.headers['retry-after'], '60');
});

test('behind a trusted proxy, a forwarded client address that is no IP address counts as the proxy, never as an address of its own', async (t) => {
  const { app } = await buildWithAdmin(t, { SVC_TRUST_PROXY_HEADERS: 'true', SVC_TRUSTED_PROXY_CIDRS: '127.0.0.1' });
  const request = (forwarded?: string) =>
    app.inject({
      method: 'POST',
      url: '/api/v1/auth/password-reset/request',
      remoteAddress: '127.0.0.1',
      headers: { origin: ORIGIN, ...(forwarded === undefined ? {} : { 'x-forwarded-for': forwarded }) },
      payload: { email: 'nobody@example.test' },
    });
  const statuses = async (entries: Array<string | undefined>) => {
    const out: number[] = [];
    for (const entry of entries) out.push((await request(entry)).statusCode);
    return out;
  };
  // 5.5.5.5 spends its 5 attempts; written with a port it is still 5.5.5.5.
  assert.deepEqual(await statuses(['5.5.5.5', '5.5.5.5', '5.5.5.5', '5.5.5.5', '5.5.5.5', '5.5.5.5:80']), [202, 202, 202, 202, 202, 429]);
  // Other spellings of it are no IP addresses: all count as the proxy, whose 5 attempts they share.
  const spellings = ['005.5.5.5', '0x05050505', 'unknown', '005.5.5.5:80', '5.5.5.05', '[5.5.5.5]:80'];
  assert.deepEqual(await statuses(spellings), [202, 202, 202, 202, 202, 429]);
  assert.equal((await request()).statusCode, 429, 'the proxy itself, with no X-Forwarded-For, is out of attempts');
  assert.equal((await request('5.5.5.6')).statusCode, 202, 'a valid client address is its own');
});

test('reset e-mails: at most 3 per account per 15 minutes whatever the client addresses; the answer never tells', async (t) => {
  const { app, mail, clock, services } = await buildWithAdmin(t);
  const request = (email: string, ip: string) =>
    app.inject({ method: 'POST', url: '/api/v1/auth/password-reset/request', remoteAddress: ip, headers: { origin: ORIGIN }, payload: { email } });
  const resetMails = () => mail.sent.filter((m) => m.to === ADMIN.email).length;
  const resetTokens = () => services.store.read((sql) => sql.get<{ n: number }>("SELECT COUNT(*) AS n FROM account_tokens WHERE kind = 'password_reset'")!.n);
  // Each request from its own address, as a botnet (or one IPv6 block's many /64s) sends them: the per-address limit
  // never trips, and without a cap per account every one was an e-mail to the same inbox.
  for (let i = 0; i < 8; i++) {
    const known = await request(ADMIN.email, `198.51.100.${100 + i}`);
    const unknown = await request(`nobody${i}@example.test`, `198.51.100.${150 + i}`);
    assert.equal(known.statusCode, 202);
    assert.equal(known.body, unknown.body, 'the answer is the same when the cap holds the e-mail back');
  }
  await new Promise((resolve) => setTimeout(resolve, 20)); // the e-mails leave after the answers
  assert.equal(resetMails(), 3);
  assert.equal(await resetTokens(), 3, 'no link is stored that was not sent');
  clock.advance(15 * 60_000);
  await request(ADMIN.email, '198.51.100.200');
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.equal(resetMails(), 4, 'the window passes');
});

test('recovery works for logged-out users whatever the signup flag says', async (t) => {
  const { app, mail } = await buildWithAdmin(t, { SVC_ALLOW_PUBLIC_SIGNUP: 'false' });
  await app.inject({ method: 'POST', url: '/api/v1/auth/password-reset/request', headers: { origin: ORIGIN }, payload: { email: ADMIN.email } });
  await new Promise((resolve) => setTimeout(resolve, 10));
  const token = mail.token(ADMIN.email, '/reset-password');
  assert.equal((await new Browser(app).post('/api/v1/auth/password-reset/confirm', { token, password: 'recovered-password' })).statusCode, 200);
  await new Browser(app).login(ADMIN.email, 'recovered-password');
});
