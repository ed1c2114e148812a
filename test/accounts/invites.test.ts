/** Invitations (SPEC 3, 4.5, 8; docs/accounts.md "Invitations"): every state-table row, tokens, delivery failure, limits. */
import assert from 'node:assert/strict';
import test, { type TestContext } from 'node:test';
import { Agent, request } from 'undici';
import { bearer, json } from '../support/build.ts';
import { ADMIN, BOOT, Browser, buildAccounts, buildWithAdmin, makeUser, operator, ORIGIN } from '../support/accounts.ts';
import { afterRead } from '../support/counting-store.ts';
import { loadScaled } from '../support/load-scaled.ts';
import { tempDir } from '../support/process.ts';
import { loadConfig } from '../../src/config.ts';
import { startServer } from '../../src/server.ts';
import { createAccountsRepository } from '../../src/accounts/repo.ts';
import { newToken, sha256Hex } from '../../src/core/ids.ts';
import { MIGRATIONS } from '../../src/store/migrations.ts';
import { openStore } from '../../src/store/store.ts';

test('creating an invitation e-mails the accept link; the inviter never sees the token; only its hash is stored', async (t) => {
  const { admin, mail, services } = await buildWithAdmin(t);
  const response = await admin.post('/api/v1/orgs/active/invites', { email: 'New@Example.test', role: 'admin' });
  assert.equal(response.statusCode, 201);
  const { invite } = json(response);
  assert.equal(invite.email, 'new@example.test');
  assert.equal(invite.role, 'admin');
  assert.equal(invite.status, 'pending');
  assert.equal(Date.parse(invite.expiresAt) - Date.parse(invite.createdAt), 7 * 86_400_000);
  assert.equal(invite.invitedBy.email, ADMIN.email);
  const message = mail.last('new@example.test');
  assert.match(message.subject, /Default/);
  assert.match(message.text, /https:\/\/app\.example\.test\/accept-invite\?token=[A-Za-z0-9_-]{43}/);
  assert.match(message.html, /href="https:\/\/app\.example\.test\/accept-invite\?token=/);
  const token = mail.token('new@example.test', '/accept-invite');
  assert.ok(!response.body.includes(token));
  const stored = await services.store.read((sql) => sql.all<{ token_hash: string }>('SELECT token_hash FROM org_invites'));
  assert.equal(stored.length, 1);
  assert.notEqual(stored[0]!.token_hash, token);
  assert.match(stored[0]!.token_hash, /^[0-9a-f]{64}$/);
  const audit = await services.store.read((sql) => sql.all<{ action: string; decision: string }>("SELECT action, decision FROM audit_events WHERE action LIKE 'invite.%'"));
  assert.deepEqual(audit, [{ action: 'invite.create', decision: 'allow' }]);
});

test('the accept link is built from SVC_APP_BASE_URL, never from the Host header', async (t) => {
  const { app, mail } = await buildWithAdmin(t);
  await app.inject({ method: 'POST', url: '/api/v1/orgs/active/invites', headers: { ...bearer(BOOT), host: 'evil.example' }, payload: { email: 'h@example.test' } });
  assert.match(mail.last('h@example.test').text, /^Accept the invitation: https:\/\/app\.example\.test\/accept-invite\?token=/m);
  assert.ok(!mail.last('h@example.test').text.includes('evil.example'));
});

test('names holding line or paragraph separators cannot lay out lines of the invitation e-mail', async (t) => {
  const { app, admin, mail, services } = await buildWithAdmin(t);
  // U+2028/2029 are mandatory line breaks to mail clients. The name rules refuse them now; names an older svc took are
  // written into the data file as it left them.
  const forged = 'Acme\u2029\u2029Accept the invitation: https://evil.example/accept-invite?token=x\u2029\u2029';
  const refused = await admin.patch('/api/v1/orgs/active', { name: forged });
  assert.equal(refused.statusCode, 400);
  assert.match(json(refused).error.message, /line separators/);
  const me = json(await admin.get('/api/v1/auth/me')).user;
  assert.equal((await app.inject({ method: 'PATCH', url: `/api/v1/users/${me.id}`, headers: bearer(BOOT), payload: { name: 'Root\u2028Mallory' } })).statusCode, 400);
  await services.store.write((sql) => {
    sql.run("UPDATE tenants SET name = ? WHERE id = 'default'", [forged.trim()]); // stored trimmed, as every name
    sql.run('UPDATE users SET name = ? WHERE id = ?', ['Root\u2028Mallory', me.id]);
  });
  assert.equal((await admin.post('/api/v1/orgs/active/invites', { email: 'lines@example.test' })).statusCode, 201);
  const message = mail.last('lines@example.test');
  for (const part of [message.subject, message.text, message.html]) assert.doesNotMatch(part, /[\r\u2028\u2029]/);
  assert.equal(message.subject, "You're invited to Acme Accept the invitation: https://evil.example/accept-invite?token=x on svc");
  const lines = message.text.split('\n').filter((line) => line !== '');
  assert.equal(lines.length, 3);
  assert.match(lines[0]!, /^Root Mallory invited you to join Acme Accept the invitation: https:\/\/evil\.example\S+ on svc as a member\.$/);
  assert.match(lines[1]!, /^Accept the invitation: https:\/\/app\.example\.test\/accept-invite\?token=/);
  assert.equal(message.html.match(/<p>/g)!.length, 3);
});

test('public lookup, then acceptance by a new address: verified user, membership, signed in, landed in the org', async (t) => {
  const { app, admin, mail, services } = await buildWithAdmin(t);
  const acme = json(await admin.post('/api/v1/orgs', { name: 'Acme' })).org.id;
  await admin.post('/api/v1/orgs/active/invites', { email: 'grace@example.test', role: 'admin' });
  const token = mail.token('grace@example.test', '/accept-invite');

  const lookup = await app.inject({ url: `/api/v1/invites/${token}` });
  assert.equal(lookup.statusCode, 200);
  assert.equal(lookup.headers['referrer-policy'], 'no-referrer');
  assert.deepEqual(
    { ...json<Record<string, unknown>>(lookup), expiresAt: undefined },
    { valid: true, status: 'pending', orgName: 'Acme', email: 'grace@example.test', role: 'admin', userExists: false, expiresAt: undefined },
  );
  const unknown = json(await app.inject({ url: `/api/v1/invites/${'x'.repeat(43)}` }));
  assert.deepEqual(unknown, { valid: false, status: 'invalid', orgName: null, email: null, role: null, userExists: false, expiresAt: null });

  const grace = new Browser(app);
  const missing = await grace.post(`/api/v1/invites/${token}/accept`, {});
  assert.equal(missing.statusCode, 400);
  const accepted = await grace.post(`/api/v1/invites/${token}/accept`, { name: 'Grace', password: 'grace-password' });
  assert.equal(accepted.statusCode, 200, accepted.body);
  const me = json(accepted);
  assert.equal(me.user.emailVerified, true);
  assert.deepEqual(me.org, { id: acme, name: 'Acme', role: 'admin' });
  assert.ok(grace.cookie);
  assert.equal(json(await grace.get('/api/v1/auth/me')).org.id, acme);
  assert.equal(json(await admin.get('/api/v1/orgs/active')).seats.pendingInvites, 0);
  // Reuse is refused, and the lookup says why.
  const reused = await new Browser(app).post(`/api/v1/invites/${token}/accept`, { name: 'Mallory', password: 'mallory-password' });
  assert.equal(reused.statusCode, 400);
  assert.equal(json(reused).error.code, 'invalid_token');
  assert.equal(json(reused).error.details.status, 'accepted');
  assert.equal(json(await app.inject({ url: `/api/v1/invites/${token}` })).status, 'accepted');
  const actions = await services.store.read((sql) => sql.all<{ action: string }>('SELECT action FROM audit_events WHERE tenant_id = ? ORDER BY seq', [acme]));
  assert.deepEqual(actions.map((a) => a.action), ['org.create', 'invite.create', 'user.signup', 'invite.accept']);
});

test('acceptance for an existing account needs that account signed in; body fields are never read', async (t) => {
  const { app, admin, mail } = await buildWithAdmin(t);
  const acme = json(await admin.post('/api/v1/orgs', { name: 'Acme' })).org.id;
  const { browser: bob } = await makeUser(app, { email: 'bob@example.test', password: 'bob-password' });
  const { browser: eve } = await makeUser(app, { email: 'eve@example.test' });
  await admin.post('/api/v1/orgs/active/invites', { email: 'bob@example.test' });
  const token = mail.token('bob@example.test', '/accept-invite');
  assert.equal(json(await app.inject({ url: `/api/v1/invites/${token}` })).userExists, true);

  for (const attempt of [
    () => new Browser(app).post(`/api/v1/invites/${token}/accept`, { name: 'Bob', password: 'bob-password' }),
    () => new Browser(app).post(`/api/v1/invites/${token}/accept`, { name: 'Bob', password: 'wrong-password' }),
    () => eve.post(`/api/v1/invites/${token}/accept`),
  ]) {
    const response = await attempt();
    assert.equal(response.statusCode, 403);
    assert.equal(json(response).error.code, 'sign_in_required');
  }
  const accepted = await bob.post(`/api/v1/invites/${token}/accept`);
  assert.equal(accepted.statusCode, 200, accepted.body);
  assert.equal(json(accepted).org.id, acme);
  assert.equal(json(await bob.get('/api/v1/auth/me')).org.id, acme); // the session landed in the org
  assert.deepEqual(json(await bob.get('/api/v1/orgs')).orgs.map((o: any) => o.id), ['default', acme]);
});

test('expired invitations report expired and cannot be accepted; revoked ones neither', async (t) => {
  const { app, admin, mail, clock } = await buildWithAdmin(t);
  await admin.post('/api/v1/orgs/active/invites', { email: 'late@example.test' });
  const lateToken = mail.token('late@example.test', '/accept-invite');
  const revokeMe = json(await admin.post('/api/v1/orgs/active/invites', { email: 'gone@example.test' })).invite.id;
  const goneToken = mail.token('gone@example.test', '/accept-invite');

  const revoked = await admin.post(`/api/v1/orgs/active/invites/${revokeMe}/revoke`);
  assert.equal(json(revoked).invite.status, 'revoked');
  assert.equal((await admin.post(`/api/v1/orgs/active/invites/${revokeMe}/revoke`)).statusCode, 409);
  assert.equal(json(await new Browser(app).post(`/api/v1/invites/${goneToken}/accept`, { name: 'G', password: 'gone-password' })).error.details.status, 'revoked');

  clock.advance(7 * 86_400_000 + 1);
  assert.equal(json(await app.inject({ url: `/api/v1/invites/${lateToken}` })).status, 'expired');
  const late = await new Browser(app).post(`/api/v1/invites/${lateToken}/accept`, { name: 'L', password: 'late-password' });
  assert.equal(late.statusCode, 400);
  assert.equal(json(late).error.details.status, 'expired');
  // A week without use also ended the admin's session (7-day idle limit).
  assert.equal((await admin.get('/api/v1/orgs/active/invites')).statusCode, 401);
  await admin.login(ADMIN.email, ADMIN.password);
  const listed = json(await admin.get('/api/v1/orgs/active/invites'));
  assert.deepEqual(listed.invites.map((i: any) => i.status).sort(), ['expired', 'revoked']);
  assert.equal(json(await admin.get('/api/v1/orgs/active/invites?status=expired')).invites.length, 1);
  assert.equal(json(await admin.get('/api/v1/orgs/active')).seats.pendingInvites, 0);
});

test('one invitation accepted several times at once: one acceptance; every other answer names it accepted, as a later one would', async (t) => {
  const { app, admin, mail, services } = await buildWithAdmin(t);
  for (let round = 0; round < 4; round++) {
    // A new address, accepted from several browsers, then an existing account accepting in several tabs.
    const fresh = `fresh${round}@example.test`;
    await admin.post('/api/v1/orgs/active/invites', { email: fresh });
    const freshToken = mail.token(fresh, '/accept-invite');
    const member = await makeUser(app, { email: `tabs${round}@example.test` }, `198.51.100.${round + 1}`);
    const orgId = json(await admin.post('/api/v1/orgs', { name: `Tabs ${round}` })).org.id;
    await admin.post('/api/v1/orgs/active/invites', { email: `tabs${round}@example.test` });
    const tabsToken = mail.token(`tabs${round}@example.test`, '/accept-invite');
    await admin.post('/api/v1/orgs/switch', { orgId: 'default' });
    // All sent before any is awaited: each reads the invitation pending before the first acceptance is written.
    const answers = await Promise.all([
      ...Array.from({ length: 6 }, (_, i) => new Browser(app, `192.0.2.${round * 10 + i}`).post(`/api/v1/invites/${freshToken}/accept`, { name: `F${i}`, password: 'fresh-password' })),
      ...Array.from({ length: 6 }, () => member.browser.post(`/api/v1/invites/${tabsToken}/accept`)),
    ]);
    for (const group of [answers.slice(0, 6), answers.slice(6)]) {
      assert.equal(group.filter((r) => r.statusCode === 200).length, 1, group.map((r) => r.body).join('\n'));
      for (const loser of group.filter((r) => r.statusCode !== 200)) {
        assert.equal(loser.statusCode, 400, loser.body);
        assert.deepEqual(json(loser).error.details, { status: 'accepted' }, loser.body);
      }
    }
    const accepts = await services.store.read((sql) => sql.all('SELECT tenant_id FROM audit_events WHERE action = ? AND details_json LIKE ?', ['invite.accept', `%${round}@example.test%`]));
    assert.deepEqual(accepts.map((row: any) => row.tenant_id).sort(), ['default', orgId].sort());
  }
});

test('a failed delivery revokes the invitation, records deny evidence, answers a retryable 503 and does not count against the address\'s cap', async (t) => {
  const { admin, mail, services } = await buildWithAdmin(t);
  mail.failing = true;
  const response = await admin.post('/api/v1/orgs/active/invites', { email: 'unlucky@example.test' });
  assert.equal(response.statusCode, 503);
  assert.equal(json(response).error.code, 'email_delivery_failed');
  assert.equal(response.headers['retry-after'], '30');
  const rows = await services.store.read((sql) => sql.all<{ status: string }>('SELECT status FROM org_invites'));
  assert.deepEqual(rows, [{ status: 'revoked' }]);
  const audit = await services.store.read((sql) =>
    sql.all<{ decision: string; details_json: string }>("SELECT decision, details_json FROM audit_events WHERE action = 'invite.create'"),
  );
  assert.equal(audit.length, 1);
  assert.equal(audit[0]!.decision, 'deny');
  assert.equal(JSON.parse(audit[0]!.details_json).reason, 'delivery_failed');
  assert.equal(json(await admin.get('/api/v1/orgs/active')).seats.pendingInvites, 0);
  // Failed deliveries reached no inbox, so they are not among the address's 3 invitations per 15 minutes.
  for (let i = 0; i < 3; i++) assert.equal((await admin.post('/api/v1/orgs/active/invites', { email: 'unlucky@example.test' })).statusCode, 503);
  mail.failing = false;
  assert.equal((await admin.post('/api/v1/orgs/active/invites', { email: 'unlucky@example.test' })).statusCode, 201);
});

/**
 * An invitation sent by an admin key of an organization its owner deletes while the e-mail is held; the delivery then
 * succeeds or fails. Answers the invitation's answer and the organization's kept audit log.
 */
async function inviteWhileTheOrganizationIsDeleted(t: TestContext, delivery: 'delivered' | 'failed') {
  const { app, mail, services } = await buildWithAdmin(t);
  const { browser: owner } = await makeUser(app, { email: 'doomed-owner@example.test' });
  const org = json(await owner.post('/api/v1/orgs', { name: 'Doomed' })).org.id;
  const key = json(await owner.post('/api/v1/keys', { name: 'admin', admin: true })).token;

  const held = mail.hold();
  const inviting = app.inject({ method: 'POST', url: '/api/v1/orgs/active/invites', headers: bearer(key), payload: { email: 'late@example.test' } });
  const release = await held;
  assert.equal((await owner.delete('/api/v1/orgs/active', { confirm: true })).statusCode, 200);
  if (delivery === 'failed') mail.failing = true;
  release();
  const invited = await inviting;
  const audit = await services.store.read((sql) => sql.all<{ action: string }>('SELECT action FROM audit_events WHERE tenant_id = ? ORDER BY seq', [org]));
  return { invited, audit };
}

for (const delivery of ['delivered', 'failed'] as const) {
  test(`an invitation whose organization is deleted while its e-mail is sent (${delivery}) is 404 and records nothing after the deletion`, async (t) => {
    const { invited, audit } = await inviteWhileTheOrganizationIsDeleted(t, delivery);
    // A failed delivery's deny row is written only while the invitation exists (gone with its organization).
    assert.equal(invited.statusCode, 404, invited.body);
    assert.equal(json(invited).error.code, 'not_found');
    // The organization's kept audit log ends with its deletion.
    assert.equal(audit.at(-1)!.action, 'org.delete');
    assert.ok(!audit.some((row) => row.action === 'invite.create'));
  });
}

test('who may invite: owners and admins; owners alone grant owner; members of the org are 409; re-inviting replaces', async (t) => {
  const { app, admin, mail } = await buildWithAdmin(t);
  const { browser: orgAdmin } = await makeUser(app, { email: 'oa@example.test', orgRole: 'admin' });
  const { browser: member } = await makeUser(app, { email: 'mm@example.test' });
  assert.equal(json(await member.post('/api/v1/orgs/active/invites', { email: 'x@example.test' })).error.code, 'admin_required');
  assert.equal(json(await member.get('/api/v1/orgs/active/invites')).error.code, 'admin_required');
  assert.equal(json(await orgAdmin.post('/api/v1/orgs/active/invites', { email: 'x@example.test', role: 'owner' })).error.code, 'owner_required');
  assert.equal((await orgAdmin.post('/api/v1/orgs/active/invites', { email: 'x@example.test' })).statusCode, 201);
  assert.equal(json(await admin.post('/api/v1/orgs/active/invites', { email: 'mm@example.test' })).error.code, 'already_member');
  const first = mail.token('x@example.test', '/accept-invite');
  await admin.post('/api/v1/orgs/active/invites', { email: 'x@example.test' });
  const second = mail.token('x@example.test', '/accept-invite');
  assert.notEqual(first, second);
  assert.equal(json(await app.inject({ url: `/api/v1/invites/${first}` })).status, 'revoked');
  assert.equal(json(await app.inject({ url: `/api/v1/invites/${second}` })).valid, true);
  assert.equal(json(await admin.get('/api/v1/orgs/active')).seats.pendingInvites, 1);
});

test('re-inviting an address revokes its pending invitation with an invite.revoke row naming the replacement, in the log of its organization', async (t) => {
  const { app, admin, services } = await buildWithAdmin(t);
  const { browser: orgAdmin } = await makeUser(app, { email: 'oa@example.test', orgRole: 'admin' });
  const first = json(await admin.post('/api/v1/orgs/active/invites', { email: 'x@example.test', role: 'owner' })).invite;
  const second = json(await orgAdmin.post('/api/v1/orgs/active/invites', { email: 'x@example.test' })).invite;
  const rows = await services.store.read((sql) =>
    sql.all<{ action: string; target: string; actor_json: string; details_json: string }>(
      "SELECT action, target, actor_json, details_json FROM audit_events WHERE action LIKE 'invite.%' ORDER BY seq",
    ),
  );
  assert.deepEqual(
    rows.map((row) => [row.action, row.target, JSON.parse(row.details_json)]),
    [
      ['invite.create', first.id, { email: 'x@example.test', role: 'owner' }],
      ['invite.revoke', first.id, { email: 'x@example.test', reason: 'replaced', replacedBy: second.id }],
      ['invite.create', second.id, { email: 'x@example.test', role: 'member' }],
    ],
  );
  assert.equal(JSON.parse(rows[1]!.actor_json).userId, JSON.parse(rows[2]!.actor_json).userId);
});

test('invitation lookup and acceptance are limited per address (20 per minute), whatever X-Forwarded-For says', async (t) => {
  const { app } = await buildWithAdmin(t);
  const statuses: number[] = [];
  for (let i = 0; i < 21; i++) {
    const response = await app.inject({ url: `/api/v1/invites/${'a'.repeat(43)}`, remoteAddress: '198.51.100.66', headers: { 'x-forwarded-for': `10.9.${i}.1`, origin: ORIGIN } });
    statuses.push(response.statusCode);
  }
  assert.deepEqual(statuses, [...Array(20).fill(200), 429]);
  const accept = await app.inject({ method: 'POST', url: `/api/v1/invites/${'a'.repeat(43)}/accept`, remoteAddress: '198.51.100.66', headers: { origin: ORIGIN }, payload: {} });
  assert.equal(accept.statusCode, 429);
});

test('invitation creation is limited per address', async (t) => {
  const { app } = await buildWithAdmin(t);
  let last = 0;
  for (let i = 0; i < 31; i++) {
    last = (await app.inject({ method: 'POST', url: '/api/v1/orgs/active/invites', remoteAddress: '198.51.100.77', headers: bearer(BOOT), payload: { email: `p${i}@example.test` } })).statusCode;
    if (i < 30) assert.equal(last, 201);
  }
  assert.equal(last, 429);
});

test('the local operator invites over the data directory socket, which has no client address', async (t) => {
  const dataDir = tempDir(t, 'svc-socket-invite-');
  const server = await startServer(loadConfig({ SVC_LOG_LEVEL: 'silent', SVC_PORT: '0' }, { dataDir }));
  t.after(() => server.close());
  const socket = new Agent({ connect: { socketPath: server.socketPath! } });
  t.after(() => socket.close());
  const call = async (method: 'GET' | 'POST', path: string, body?: unknown) => {
    const response = await request(`http://localhost${path}`, {
      method,
      dispatcher: socket,
      headers: { 'content-type': 'application/json' },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    return { status: response.statusCode, body: (await response.body.json()) as any };
  };
  const created = await call('POST', '/api/v1/orgs/active/invites', { email: 'sock@example.test' });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  assert.equal(created.body.invite.invitedBy, null);
  assert.equal((await call('GET', '/api/v1/orgs/active/invites')).body.invites.length, 1);
});

test('svc serve --port 0 without SVC_APP_BASE_URL e-mails links with the port it bound', async (t) => {
  const { ensureBundle, startServe, tempDir } = await import('../support/process.ts');
  await ensureBundle();
  const server = await startServe(t, tempDir(t), { SVC_API_KEY: BOOT, SVC_APP_BASE_URL: '' });
  const response = await fetch(`${server.address}/api/v1/orgs/active/invites`, {
    method: 'POST',
    headers: { authorization: `Bearer ${BOOT}`, 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'port@example.test' }),
  });
  assert.equal(response.status, 201);
  const port = new URL(server.address).port;
  // The e-mail (here a line of the server's output) leaves after the answer.
  for (const deadline = Date.now() + loadScaled(1_000); !server.output().includes('accept-invite?token=') && Date.now() < deadline; ) {
    await new Promise((r) => setTimeout(r, 20));
  }
  assert.match(server.output(), new RegExp(`http://127\\.0\\.0\\.1:${port}/accept-invite\\?token=[A-Za-z0-9_-]{43}`));
});

test("an invitation carries its inviter's authority: once the inviter may no longer grant its role, it cannot be accepted", async (t) => {
  const { app, admin, mail } = await buildWithAdmin(t);
  const { browser: rogue, id: rogueId } = await makeUser(app, { email: 'rogue@example.test', orgRole: 'admin' });
  const { browser: gone, id: goneId } = await makeUser(app, { email: 'gone@example.test', orgRole: 'admin' });
  assert.equal((await rogue.post('/api/v1/orgs/active/invites', { email: 'rogue-alt@example.test', role: 'admin' })).statusCode, 201);
  assert.equal((await rogue.post('/api/v1/orgs/active/invites', { email: 'friend@example.test' })).statusCode, 201);
  assert.equal((await gone.post('/api/v1/orgs/active/invites', { email: 'gone-alt@example.test', role: 'admin' })).statusCode, 201);
  // The owner takes the admin role back from one and removes the other.
  assert.equal((await admin.patch(`/api/v1/orgs/active/members/${rogueId}`, { role: 'member' })).statusCode, 200);
  assert.equal((await admin.delete(`/api/v1/orgs/active/members/${goneId}`)).statusCode, 200);

  for (const email of ['rogue-alt@example.test', 'friend@example.test', 'gone-alt@example.test']) {
    const token = mail.token(email, '/accept-invite');
    const accepted = await new Browser(app, '198.51.100.77').post(`/api/v1/invites/${token}/accept`, { name: 'Alt', password: 'alt-password-1' });
    assert.equal(accepted.statusCode, 400, `${email}: ${accepted.body}`);
    assert.deepEqual(json(accepted).error.details, { status: 'revoked' });
    assert.equal(json(await app.inject({ url: `/api/v1/invites/${token}` })).status, 'revoked');
  }
  const members = json(await admin.get('/api/v1/orgs/active')).members.map((m: { email: string }) => m.email);
  assert.ok(!members.some((email: string) => email.endsWith('-alt@example.test') || email === 'friend@example.test'), members.join());
  // An invitation of an inviter who keeps the authority, or of an operator (no inviter), is accepted as before.
  assert.equal((await admin.post('/api/v1/orgs/active/invites', { email: 'ok@example.test', role: 'admin' })).statusCode, 201);
  const ok = await new Browser(app, '198.51.100.78').post(`/api/v1/invites/${mail.token('ok@example.test', '/accept-invite')}/accept`, { name: 'Ok', password: 'ok-password-1' });
  assert.equal(ok.statusCode, 200, ok.body);
  assert.equal(json(ok).org.role, 'admin');
  const byOperator = await app.inject({ method: 'POST', url: '/api/v1/orgs/active/invites', headers: bearer(BOOT), payload: { email: 'op@example.test', role: 'owner' } });
  assert.equal(byOperator.statusCode, 201);
  const op = await new Browser(app, '198.51.100.79').post(`/api/v1/invites/${mail.token('op@example.test', '/accept-invite')}/accept`, { name: 'Op', password: 'op-password-1' });
  assert.equal(op.statusCode, 200, op.body);
});

test("an invitation sent by an admin API key carries the key's authority: once the key is revoked, it cannot be accepted", async (t) => {
  const { app, admin, mail, services } = await buildWithAdmin(t);
  const created = json(await admin.post('/api/v1/keys', { name: 'inviter', admin: true }));
  const kept = json(await admin.post('/api/v1/keys', { name: 'kept', admin: true })).token;
  const invite = (key: string, email: string) =>
    app.inject({ method: 'POST', url: '/api/v1/orgs/active/invites', headers: bearer(key), payload: { email, role: 'admin' } });
  assert.equal((await invite(created.token, 'by-key@example.test')).statusCode, 201);
  assert.equal((await invite(kept, 'by-kept-key@example.test')).statusCode, 201);

  assert.equal((await admin.post(`/api/v1/keys/${created.key.id}/revoke`)).statusCode, 200);
  const token = mail.token('by-key@example.test', '/accept-invite');
  const accepted = await new Browser(app, '198.51.100.80').post(`/api/v1/invites/${token}/accept`, { name: 'Key', password: 'key-password-1' });
  assert.equal(accepted.statusCode, 400, accepted.body);
  assert.deepEqual(json(accepted).error.details, { status: 'revoked' });
  assert.equal(json(await app.inject({ url: `/api/v1/invites/${token}` })).status, 'revoked');
  // The invitation of a key that keeps its authority is accepted as before.
  const ok = await new Browser(app, '198.51.100.81').post(`/api/v1/invites/${mail.token('by-kept-key@example.test', '/accept-invite')}/accept`, { name: 'Ok', password: 'ok-password-1' });
  assert.equal(ok.statusCode, 200, ok.body);
  assert.equal(json(ok).org.role, 'admin');
  // The inviting key is recorded with the invitation.
  const stored = await services.store.read((sql) => sql.all<{ email: string; invited_by_key: string | null }>('SELECT email, invited_by_key FROM org_invites ORDER BY email'));
  assert.deepEqual(stored.map((row) => row.invited_by_key !== null), [true, true]);
  assert.equal(stored.find((row) => row.email === 'by-key@example.test')!.invited_by_key, created.key.id);
});

test('migration 9 keeps the invitations of an older data file, which name no inviting key and are accepted as before', async (t) => {
  const dataDir = tempDir(t);
  const older = openStore({ dataDir, migrations: MIGRATIONS.filter((migration) => migration.version < 9) });
  await older.write((sql) => {
    sql.run("INSERT INTO tenants (id, name, created_at) VALUES ('org_old', 'Old', 1)");
    sql.run(
      `INSERT INTO org_invites (id, tenant_id, email, role, token_hash, invited_by, status, created_at, expires_at)
       VALUES ('inv_old', 'org_old', 'old@example.test', 'admin', ?, NULL, 'pending', 1, ?)`,
      ['0'.repeat(64), Date.now() + 86_400_000],
    );
  });
  await older.close();
  const store = openStore({ dataDir });
  t.after(() => store.close());
  const invite = await createAccountsRepository(store).findInvite('org_old', 'inv_old');
  assert.equal(invite?.status, 'pending');
  assert.equal(invite?.invitedByKey, null);
  assert.equal(await createAccountsRepository(store).revokeIfInviterLapsed('inv_old', Date.now(), () => () => undefined), false);
});

test("migration 11 finds the inviting key of an invitation older than migration 9 in its invite.create row, so the key's revocation revokes it", async (t) => {
  const dataDir = tempDir(t);
  const older = openStore({ dataDir, migrations: MIGRATIONS.filter((migration) => migration.version < 9) });
  const tokens = { byKey: newToken(), byOperator: newToken() };
  await older.write((sql) => {
    sql.run("INSERT INTO tenants (id, name, created_at) VALUES ('default', 'Default', 1)");
    sql.run(
      `INSERT INTO api_keys (id, tenant_id, name, mode, app_id, admin, token_hash, token_prefix, created_at, revoked_at)
       VALUES ('key_old', 'default', 'old', 'optimize', NULL, 1, ?, 'svc_abcdef', 1, NULL)`,
      ['1'.repeat(64)],
    );
    const invite = (id: string, email: string, token: string, actor: Record<string, string>, seq: number) => {
      sql.run(
        `INSERT INTO org_invites (id, tenant_id, email, role, token_hash, invited_by, status, created_at, expires_at)
         VALUES (?, 'default', ?, 'admin', ?, NULL, 'pending', 1, ?)`,
        [id, email, sha256Hex(token), Date.UTC(2026, 10, 30)],
      );
      sql.run(
        `INSERT INTO audit_events (id, tenant_id, seq, action, decision, actor_json, target, details_json, created_at, prev_hash, hash)
         VALUES (?, 'default', ?, 'invite.create', 'allow', ?, ?, '{}', 1, '', '')`,
        [`aud_${id}`, seq, JSON.stringify(actor), id],
      );
    };
    invite('inv_key', 'by-old-key@example.test', tokens.byKey, { kind: 'api_key', keyId: 'key_old' }, 1);
    invite('inv_op', 'by-operator@example.test', tokens.byOperator, { kind: 'bootstrap' }, 2);
  });
  await older.close();

  const { app } = await buildAccounts(t, { dataDir, env: { SVC_API_KEY: BOOT } });
  const status = async (token: string) => json(await app.inject({ url: `/api/v1/invites/${token}` })).status;
  assert.equal(await status(tokens.byKey), 'pending');
  assert.equal((await app.inject({ method: 'POST', url: '/api/v1/keys/key_old/revoke', headers: bearer(BOOT) })).statusCode, 200);
  assert.equal(await status(tokens.byKey), 'revoked', "the key's invitation lapsed with it");
  assert.equal(await status(tokens.byOperator), 'pending', "an operator's invitation is not affected");
});

test("the invitation list and seats tell the truth once an inviter lost the authority: revoked, with an audit row each", async (t) => {
  const { app, admin, services } = await buildWithAdmin(t);
  const { browser: rogue, id: rogueId } = await makeUser(app, { email: 'lister@example.test', orgRole: 'admin' });
  const key = json(await admin.post('/api/v1/keys', { name: 'inviter', admin: true }));
  assert.equal((await rogue.post('/api/v1/orgs/active/invites', { email: 'by-user@example.test', role: 'admin' })).statusCode, 201);
  const byKey = await app.inject({ method: 'POST', url: '/api/v1/orgs/active/invites', headers: bearer(key.token), payload: { email: 'by-key@example.test' } });
  assert.equal(byKey.statusCode, 201);
  assert.equal((await admin.post('/api/v1/orgs/active/invites', { email: 'by-owner@example.test' })).statusCode, 201);
  assert.equal(json(await admin.get('/api/v1/orgs/active')).seats.pendingInvites, 3);

  assert.equal((await admin.patch(`/api/v1/orgs/active/members/${rogueId}`, { role: 'member' })).statusCode, 200);
  assert.equal((await admin.post(`/api/v1/keys/${key.key.id}/revoke`)).statusCode, 200);

  const statuses = Object.fromEntries(json(await admin.get('/api/v1/orgs/active/invites')).invites.map((i: { email: string; status: string }) => [i.email, i.status]));
  assert.deepEqual(statuses, { 'by-user@example.test': 'revoked', 'by-key@example.test': 'revoked', 'by-owner@example.test': 'pending' });
  assert.equal(json(await admin.get('/api/v1/orgs/active/invites?status=pending')).pagination.total, 1);
  assert.equal(json(await admin.get('/api/v1/orgs/active')).seats.pendingInvites, 1);
  const audit = await services.store.read((sql) =>
    sql.all<{ actor_json: string; details_json: string }>("SELECT actor_json, details_json FROM audit_events WHERE tenant_id = 'default' AND action = 'invite.revoke' ORDER BY seq"),
  );
  assert.deepEqual(
    audit.map((row) => [JSON.parse(row.actor_json), JSON.parse(row.details_json)]).sort((a, b) => String(a[1].email).localeCompare(b[1].email)),
    [
      [{ kind: 'system' }, { email: 'by-key@example.test', reason: 'inviter_lapsed' }],
      [{ kind: 'system' }, { email: 'by-user@example.test', reason: 'inviter_lapsed' }],
    ],
  );
  // Read again: nothing more is revoked or recorded, and with nothing lapsed the reads write nothing.
  const write = services.store.write;
  let writes = 0;
  services.store.write = ((fn) => {
    writes += 1;
    return write(fn);
  }) as typeof write;
  t.after(() => (services.store.write = write));
  await admin.get('/api/v1/orgs/active/invites');
  await admin.get('/api/v1/orgs/active');
  assert.equal(writes, 0);
  assert.equal(await services.store.read((sql) => sql.get<{ n: number }>("SELECT COUNT(*) AS n FROM audit_events WHERE action = 'invite.revoke'")!.n), 2);
});

test("losing the authority revokes the inviter's pending invitations in the same write, each audit row dated then, after the change's own row", async (t) => {
  const { app, admin, clock } = await buildWithAdmin(t);
  const { browser: demoted, id: demotedId } = await makeUser(app, { email: 'demoted@example.test', orgRole: 'admin' });
  const { browser: removed, id: removedId } = await makeUser(app, { email: 'removed@example.test', orgRole: 'admin' });
  const { browser: deleted, id: deletedId } = await makeUser(app, { email: 'deleted@example.test', orgRole: 'admin' });
  const { browser: platform, id: platformId } = await makeUser(app, { email: 'platform@example.test', orgRole: 'member', role: 'admin' });
  const key = json(await admin.post('/api/v1/keys', { name: 'inviter', admin: true }));
  const invite = async (send: (email: string) => Promise<{ statusCode: number }>, email: string) => assert.equal((await send(email)).statusCode, 201, email);
  await invite((email) => demoted.post('/api/v1/orgs/active/invites', { email }), 'of-demoted@example.test');
  await invite((email) => removed.post('/api/v1/orgs/active/invites', { email }), 'of-removed@example.test');
  await invite((email) => deleted.post('/api/v1/orgs/active/invites', { email }), 'of-deleted@example.test');
  await invite((email) => platform.post('/api/v1/orgs/active/invites', { email }), 'of-platform@example.test');
  await invite((email) => app.inject({ method: 'POST', url: '/api/v1/orgs/active/invites', headers: bearer(key.token), payload: { email } }), 'of-key@example.test');

  clock.advance(60_000);
  const lostAt = new Date(clock.now()).toISOString();
  assert.equal((await admin.patch(`/api/v1/orgs/active/members/${demotedId}`, { role: 'member' })).statusCode, 200);
  assert.equal((await admin.delete(`/api/v1/orgs/active/members/${removedId}`)).statusCode, 200);
  assert.equal((await admin.delete(`/api/v1/users/${deletedId}`)).statusCode, 200);
  assert.equal((await app.inject({ method: 'PATCH', url: `/api/v1/users/${platformId}`, headers: bearer(BOOT), payload: { role: 'member' } })).statusCode, 200);
  assert.equal((await admin.post(`/api/v1/keys/${key.key.id}/revoke`)).statusCode, 200);
  // Read an hour later, through the log alone (which revokes nothing on its own): the revocations are there, dated
  // when the authority went, each right after the row of the change that took it.
  clock.advance(3_600_000);
  type Row = { seq: number; action: string; target: string; createdAt: string; actor: Record<string, string>; details: { email?: string; reason?: string } };
  const rows: Row[] = json(await app.inject({ url: '/api/v1/audit?limit=500', headers: bearer(BOOT) })).events.reverse();
  const revocations = rows.filter((row) => row.action === 'invite.revoke');
  assert.deepEqual(
    revocations.map((row) => [row.details.email, row.details.reason, row.actor.kind, row.createdAt]),
    ['demoted', 'removed', 'deleted', 'platform', 'key'].map((who) => [`of-${who}@example.test`, 'inviter_lapsed', 'system', lostAt]),
  );
  const causes = [
    ['org.member_role', demotedId],
    ['org.member_remove', removedId],
    ['user.delete', deletedId],
    ['user.update', platformId],
    ['key.revoke', key.key.id],
  ];
  revocations.forEach((revocation, i) => {
    const cause = rows[rows.indexOf(revocation) - 1]!;
    assert.deepEqual([cause.action, cause.target], causes[i], `the row before ${revocation.details.email}'s revocation`);
  });
  const statuses = json(await admin.get('/api/v1/orgs/active/invites')).invites.map((i: { status: string }) => i.status);
  assert.deepEqual(statuses, ['revoked', 'revoked', 'revoked', 'revoked', 'revoked']);
  assert.equal(json(await app.inject({ url: '/api/v1/audit?limit=500', headers: bearer(BOOT) })).events.filter((row: Row) => row.action === 'invite.revoke').length, 5, 'the read revoked nothing more');
});

test("a platform admin without an organization who takes a platform role away logs the change before the revocations it caused, in the same write", async (t) => {
  const { app, admin } = await buildWithAdmin(t);
  const { browser: platform, id: platformId } = await makeUser(app, { email: 'platform@example.test', orgRole: 'member', role: 'admin' });
  const { browser: rootless, id: rootlessId } = await makeUser(app, { email: 'rootless@example.test', role: 'admin' });
  assert.equal((await platform.post('/api/v1/orgs/active/invites', { email: 'of-platform@example.test' })).statusCode, 201);
  assert.equal((await admin.delete(`/api/v1/orgs/active/members/${rootlessId}`)).statusCode, 200);
  await rootless.login('rootless@example.test', 'a-good-password');
  assert.equal(json(await rootless.get('/api/v1/auth/me')).org, null);

  assert.equal((await rootless.patch(`/api/v1/users/${platformId}`, { role: 'member' })).statusCode, 200);
  type Row = { seq: number; action: string; target: string; actor: Record<string, string>; details: Record<string, unknown> };
  const rows: Row[] = json(await app.inject({ url: '/api/v1/audit?limit=500', headers: bearer(BOOT) })).events.reverse();
  const tail = rows.filter((row) => row.action === 'user.update' || row.action === 'invite.revoke');
  // The cause, then its effect: the platform role change, then the invitation that lapsed with it.
  assert.deepEqual(
    tail.map((row) => [row.action, row.action === 'user.update' ? row.target : row.details.email]),
    [['user.update', platformId], ['invite.revoke', 'of-platform@example.test']],
  );
  assert.deepEqual(tail[0]!.details, { from: 'admin', role: 'member' });
  assert.equal(tail[0]!.actor.userId, rootlessId);
  assert.equal(tail[1]!.seq, tail[0]!.seq + 1, 'nothing between the change and its revocation');
});

test('invitations of one address: at most 3 per 15 minutes across organizations; past it a 429, and nothing is made or sent', async (t) => {
  const { app, admin, mail, clock } = await buildWithAdmin(t);
  const orgs: string[] = [];
  for (let i = 0; i < 5; i++) orgs.push(json(await admin.post('/api/v1/orgs', { name: `Flood ${i}` })).org.id);
  const victim = 'inbox@example.test';
  const invite = (orgId: string, ip: string, email = victim) =>
    app.inject({ method: 'POST', url: '/api/v1/orgs/active/invites', remoteAddress: ip, headers: operator(BOOT, orgId), payload: { email } });
  const delivered = () => mail.sent.filter((m) => m.to === victim).length;
  const pendingFor = async (orgId: string) =>
    json(await app.inject({ url: '/api/v1/orgs/active/invites?status=pending', headers: operator(BOOT, orgId) })).invites.filter((i: { email: string }) => i.email === victim);
  // Each organization from its own client address: the per-address limit never trips, and without a cap per invited
  // address every one was an e-mail to the same inbox.
  const answers = [];
  for (let i = 0; i < 5; i++) answers.push(await invite(orgs[i]!, `198.51.100.${30 + i}`));
  assert.deepEqual(answers.map((r) => r.statusCode), [201, 201, 201, 429, 429]);
  assert.equal(json(answers[3]!).error.code, 'rate_limited');
  assert.ok(Number(answers[3]!.headers['retry-after']) > 0);
  assert.equal(delivered(), 3);
  assert.deepEqual(await pendingFor(orgs[3]!), [], 'a refused invitation is not made');
  // Other addresses are not held by it.
  assert.equal((await invite(orgs[1]!, '198.51.100.61', 'someone@example.test')).statusCode, 201);
  clock.advance(15 * 60_000 + 1_000);
  assert.equal((await invite(orgs[3]!, '198.51.100.62')).statusCode, 201, 'the window passes');
  assert.equal(delivered(), 4);
  assert.equal((await pendingFor(orgs[3]!)).length, 1);
});

test('a failed delivery records its deny evidence also when the invitation was revoked while its e-mail was on its way', async (t) => {
  const { app, admin, mail, services } = await buildWithAdmin(t);
  const held = mail.hold();
  const inviting = admin.post('/api/v1/orgs/active/invites', { email: 'slow@example.test' });
  const release = await held;
  const pending = json(await admin.get('/api/v1/orgs/active/invites')).invites.find((invite: { email: string }) => invite.email === 'slow@example.test');
  assert.equal((await admin.post(`/api/v1/orgs/active/invites/${pending.id}/revoke`)).statusCode, 200);
  mail.failing = true;
  release();
  const invited = await inviting;
  assert.equal(invited.statusCode, 503, invited.body);
  const rows = await services.store.read((sql) =>
    sql.all<{ action: string; decision: string; details_json: string }>('SELECT action, decision, details_json FROM audit_events WHERE target = ? ORDER BY seq', [pending.id]),
  );
  assert.deepEqual(
    rows.map((row) => [row.action, row.decision, JSON.parse(row.details_json).reason ?? null]),
    [
      ['invite.revoke', 'allow', null],
      ['invite.create', 'deny', 'delivery_failed'],
    ],
  );
});

test('an existing account accepting while its deletion commits is answered as after the deletion (no account to accept for), not a 500', async (t) => {
  // The deletion lands right after the acceptance read the invited address's account.
  const race = afterRead((read) => read.text.includes('FROM users WHERE email = ?') && JSON.stringify(read.params) === '["bob@example.test"]');
  const { app, admin, mail, services } = await buildWithAdmin(t, {}, {}, race.wrap);
  const acme = json(await admin.post('/api/v1/orgs', { name: 'Acme' })).org.id;
  const { browser: bob, id } = await makeUser(app, { email: 'bob@example.test' });
  await admin.post('/api/v1/orgs/active/invites', { email: 'bob@example.test' });
  const token = mail.token('bob@example.test', '/accept-invite');
  let deleted: { statusCode: number; body: string } | undefined;
  race.arm(async () => (deleted = await app.inject({ method: 'DELETE', url: `/api/v1/users/${id}`, headers: operator(BOOT) })));
  const accepted = await bob.post(`/api/v1/invites/${token}/accept`);
  assert.ok(race.fired());
  assert.equal(deleted?.statusCode, 200, deleted?.body);
  // After the deletion the cookie is stale and the address has no account: a new one needs a name and a password.
  assert.equal(accepted.statusCode, 400, accepted.body);
  assert.equal(json(accepted).error.code, 'invalid_request');
  assert.equal(json(await app.inject({ url: `/api/v1/invites/${token}` })).status, 'pending');
  const members = await services.store.read((sql) => sql.all('SELECT 1 FROM org_members WHERE tenant_id = ? AND user_id = ?', [acme, id]));
  assert.equal(members.length, 0);
});
