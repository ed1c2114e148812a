/** Admin user management (SPEC 4.4; docs/accounts.md "Users"): scope rules, temp passwords, deletion, mass assignment. */
import assert from 'node:assert/strict';
import test from 'node:test';
import { bearer, json } from '../support/build.ts';
import type { Sql } from '../../src/store/sql.ts';
import type { Store } from '../../src/store/store.ts';
import { ADMIN, BOOT, Browser, buildWithAdmin, gatedHasher, makeUser, operator } from '../support/accounts.ts';

async function newOrg(app: import('fastify').FastifyInstance, name: string, ownerEmail: string): Promise<string> {
  const response = await app.inject({ method: 'POST', url: '/api/v1/orgs', headers: bearer(BOOT), payload: { name, ownerEmail } });
  assert.equal(response.statusCode, 201, response.body);
  return json(response).org.id;
}

test('an admin creates a user with a temporary password; the answer shows it once, never a hash', async (t) => {
  const { app, admin, services } = await buildWithAdmin(t);
  const created = await admin.post('/api/v1/users', { email: '  New.Person@Example.TEST ', name: 'New Person', orgRole: 'admin' });
  assert.equal(created.statusCode, 201, created.body);
  assert.equal(created.headers['cache-control'], 'no-store');
  const body = json(created);
  assert.equal(body.user.email, 'new.person@example.test');
  assert.equal(body.user.mustChangePassword, true);
  assert.equal(body.user.emailVerified, false);
  assert.equal(body.user.role, 'member');
  assert.equal(body.user.orgRole, 'admin');
  assert.match(body.tempPassword, /^[A-Za-z0-9_-]{20}$/);
  assert.ok(!created.body.includes('scrypt'));
  const me = await new Browser(app).login('new.person@example.test', body.tempPassword);
  assert.equal(me.mustChangePassword, true);
  // The list never carries hashes either, and filters by e-mail case-insensitively.
  const listed = await admin.get('/api/v1/users?email=NEW.person@example.test');
  assert.equal(json(listed).users.length, 1);
  assert.ok(!listed.body.includes('scrypt'));
  const audit = await services.store.read((sql) => sql.all<{ action: string }>("SELECT action FROM audit_events WHERE action = 'user.create'"));
  assert.equal(audit.length, 1);
  // Duplicates are 409; the rules of passwords and e-mails are 400.
  assert.equal(json(await admin.post('/api/v1/users', { email: 'new.person@example.test' })).error.code, 'email_taken');
  assert.equal((await admin.post('/api/v1/users', { email: 'x@example.test', tempPassword: 'short' })).statusCode, 400);
  assert.equal((await admin.post('/api/v1/users', { email: 'not-an-email' })).statusCode, 400);
  assert.equal((await admin.post('/api/v1/users', { email: 'y@example.test', emailVerified: true })).statusCode, 400);
});

test('platform admins list everyone with memberships; an org owner lists only their organization', async (t) => {
  const { app, admin } = await buildWithAdmin(t);
  const { browser: owner } = await makeUser(app, { email: 'owner@acme.test' });
  const acme = await newOrg(app, 'Acme', 'owner@acme.test');
  await makeUser(app, { email: 'member@acme.test', orgId: acme });
  await owner.post('/api/v1/orgs/switch', { orgId: acme });

  const all = json(await admin.get('/api/v1/users')).users;
  assert.deepEqual(all.map((u: any) => u.email).sort(), ['member@acme.test', 'owner@acme.test', ADMIN.email]);
  assert.ok(all.every((u: any) => Array.isArray(u.memberships)));

  const scoped = json(await owner.get('/api/v1/users'));
  assert.deepEqual(scoped.users.map((u: any) => u.email).sort(), ['member@acme.test', 'owner@acme.test']);
  assert.equal(scoped.pagination.total, 2);
  assert.ok(scoped.users.every((u: any) => u.memberships === undefined));
  assert.equal(json(await owner.get(`/api/v1/users?email=${encodeURIComponent(ADMIN.email)}`)).users.length, 0);
});

test('an org owner cannot take over the installation', async (t) => {
  const { app, admin, mail } = await buildWithAdmin(t);
  const { browser: owner, id: ownerId } = await makeUser(app, { email: 'owner@acme.test' });
  const acme = await newOrg(app, 'Acme', 'owner@acme.test');
  await owner.post('/api/v1/orgs/switch', { orgId: acme });
  const adminId = json(await admin.get('/api/v1/auth/me')).user.id;

  // Creating a platform admin, raising anyone's platform role: platform admins only.
  const create = await owner.post('/api/v1/users', { email: 'evil@acme.test', role: 'admin' });
  assert.equal(create.statusCode, 403);
  assert.equal(json(create).error.code, 'platform_admin_required');
  assert.equal((await owner.patch(`/api/v1/users/${ownerId}`, { role: 'admin' })).statusCode, 403);
  // The platform admin is outside the owner's organization: invisible (404), and nothing changes.
  assert.equal((await owner.delete(`/api/v1/users/${adminId}`)).statusCode, 404);
  assert.equal((await owner.post(`/api/v1/users/${adminId}/reset-password`)).statusCode, 404);
  await new Browser(app).login(ADMIN.email, ADMIN.password);

  // A member of Acme who also belongs to the default organization is reachable by platform admins only.
  const { browser: dual, id: dualId } = await makeUser(app, { email: 'dual@example.test' });
  assert.equal((await app.inject({ method: 'POST', url: '/api/v1/orgs/active/invites', headers: operator(BOOT, acme), payload: { email: 'dual@example.test' } })).statusCode, 201);
  const accepted = await dual.post(`/api/v1/invites/${mail.token('dual@example.test', '/accept-invite')}/accept`);
  assert.equal(accepted.statusCode, 200, accepted.body);
  const reset = await owner.post(`/api/v1/users/${dualId}/reset-password`);
  assert.equal(reset.statusCode, 403);
  assert.equal(json(reset).error.code, 'platform_admin_required');
  assert.equal((await owner.delete(`/api/v1/users/${dualId}`)).statusCode, 403);
  assert.equal((await dual.get('/api/v1/auth/me')).statusCode, 200);
  // The platform admin may.
  assert.equal((await admin.post(`/api/v1/users/${dualId}/reset-password`)).statusCode, 200);
});

test('outranking: admins act on members only; owners on anyone of their organization; nobody deletes themself', async (t) => {
  const { app } = await buildWithAdmin(t);
  const acme = await newOrg(app, 'Acme', ADMIN.email);
  const { browser: owner, id: ownerId } = await makeUser(app, { email: 'owner@acme.test', orgId: acme, orgRole: 'owner' });
  const { browser: orgAdmin, id: orgAdminId } = await makeUser(app, { email: 'admin@acme.test', orgId: acme, orgRole: 'admin' });
  const { id: memberId } = await makeUser(app, { email: 'member@acme.test', orgId: acme });
  const { browser: member } = await makeUser(app, { email: 'member2@acme.test', orgId: acme });
  for (const b of [owner, orgAdmin, member]) await b.post('/api/v1/orgs/switch', { orgId: acme });

  // Members manage nothing.
  assert.equal(json(await member.get('/api/v1/users')).error.code, 'admin_required');
  assert.equal(json(await member.post(`/api/v1/users/${memberId}/reset-password`)).error.code, 'admin_required');
  // An admin may reset a member, not another admin or an owner.
  assert.equal((await orgAdmin.post(`/api/v1/users/${memberId}/reset-password`)).statusCode, 200);
  assert.equal((await orgAdmin.post(`/api/v1/users/${ownerId}/reset-password`)).statusCode, 403);
  assert.equal((await orgAdmin.delete(`/api/v1/users/${ownerId}`)).statusCode, 403);
  // An admin grants member and admin but not owner.
  assert.equal((await orgAdmin.post('/api/v1/users', { email: 'n1@acme.test', orgRole: 'owner' })).statusCode, 403);
  assert.equal((await orgAdmin.post('/api/v1/users', { email: 'n2@acme.test', orgRole: 'admin' })).statusCode, 201);
  // An owner may act on an admin; nobody deletes themself.
  assert.equal((await owner.post(`/api/v1/users/${orgAdminId}/reset-password`)).statusCode, 200);
  assert.equal((await owner.delete(`/api/v1/users/${ownerId}`)).statusCode, 400);
  assert.equal((await owner.delete(`/api/v1/users/${memberId}`)).statusCode, 200);
  assert.equal((await owner.get(`/api/v1/users?email=member@acme.test`)).statusCode, 200);
  assert.equal(json(await owner.get(`/api/v1/users?email=member@acme.test`)).users.length, 0);
});

test('an admin reset ends every session of the user and demands a new password; deletion keeps API keys', async (t) => {
  const { app, admin } = await buildWithAdmin(t);
  const { browser: user, id } = await makeUser(app, { email: 'worker@example.test', orgRole: 'admin' });
  const key = json(await user.post('/api/v1/keys', { name: 'made-by-worker' }));
  assert.ok(key.token);
  const reset = json(await admin.post(`/api/v1/users/${id}/reset-password`));
  assert.equal(reset.user.mustChangePassword, true);
  assert.equal((await user.get('/api/v1/auth/me')).statusCode, 401);
  const again = new Browser(app);
  assert.equal((await again.login('worker@example.test', reset.tempPassword)).mustChangePassword, true);

  const deleted = await admin.delete(`/api/v1/users/${id}`);
  assert.deepEqual(json(deleted), { deleted: true, id });
  assert.equal((await again.get('/api/v1/auth/me')).statusCode, 401);
  // The key belongs to the tenant and still works.
  const chat = await app.inject({
    method: 'POST',
    url: '/v1/chat/completions',
    headers: bearer(key.token),
    payload: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'still here?' }] },
  });
  assert.equal(chat.statusCode, 200);
  assert.equal((await admin.delete(`/api/v1/users/${id}`)).statusCode, 404);
});

test('a user created in an organization deleted while the password was hashed is 404 and leaves no user', async (t) => {
  const hasher = gatedHasher();
  const { app } = await buildWithAdmin(t, {}, { passwordHasher: hasher });
  const { browser: owner } = await makeUser(app, { email: 'doomed-owner@example.test' });
  assert.equal((await owner.post('/api/v1/orgs', { name: 'Doomed' })).statusCode, 201);
  const key = json(await owner.post('/api/v1/keys', { name: 'admin', admin: true })).token;

  const held = hasher.hold();
  const creating = app.inject({ method: 'POST', url: '/api/v1/users', headers: bearer(key), payload: { email: 'late@example.test' } });
  const release = await held;
  assert.equal((await owner.delete('/api/v1/orgs/active', { confirm: true })).statusCode, 200);
  release();
  const created = await creating;
  assert.equal(created.statusCode, 404, created.body);
  assert.equal(json(created).error.code, 'not_found');
  const listed = await app.inject({ url: '/api/v1/users?email=late@example.test', headers: operator(BOOT) });
  assert.equal(json(listed).users.length, 0, 'nothing was created');
});

test('an admin reset in an organization deleted while the temporary password was hashed is 404 and writes no row after its org.delete', async (t) => {
  const hasher = gatedHasher();
  const { app, services } = await buildWithAdmin(t, {}, { passwordHasher: hasher });
  const { browser: owner, id } = await makeUser(app, { email: 'doomed-owner@example.test' });
  const org = json(await owner.post('/api/v1/orgs', { name: 'Doomed' })).org.id;
  const passwordOf = () => services.store.read((sql) => sql.get<{ password_hash: string }>('SELECT password_hash FROM users WHERE id = ?', [id])!.password_hash);
  const before = await passwordOf();

  // A platform admin reaches the user whatever their memberships; the reset's row goes into the organization it acts in.
  const held = hasher.hold();
  const resetting = app.inject({ method: 'POST', url: `/api/v1/users/${id}/reset-password`, headers: operator(BOOT, org) });
  const release = await held;
  assert.equal((await owner.delete('/api/v1/orgs/active', { confirm: true })).statusCode, 200);
  release();
  const reset = await resetting;
  assert.equal(reset.statusCode, 404, reset.body);
  assert.equal(json(reset).error.code, 'not_found');
  const audit = await services.store.read((sql) => sql.all<{ action: string }>('SELECT action FROM audit_events WHERE tenant_id = ? ORDER BY seq', [org]));
  assert.equal(audit.at(-1)!.action, 'org.delete');
  assert.equal(await passwordOf(), before, 'the password was not reset');
});

/**
 * Acme, its owner, and a user of Acme only (reachable by Acme's owner, signed in on their own password) whom the
 * default organization has invited: accepting `token` puts them out of the owner's reach.
 */
async function acmeMemberInvitedElsewhere({ app, admin, mail }: Awaited<ReturnType<typeof buildWithAdmin>>) {
  const { browser: owner } = await makeUser(app, { email: 'acme-owner@example.test' });
  assert.equal((await owner.post('/api/v1/orgs', { name: 'Acme' })).statusCode, 201);
  const created = json(await owner.post('/api/v1/users', { email: 'target@example.test', tempPassword: 'temporary-pass-1' }));
  const target = new Browser(app, '203.0.113.20');
  await target.login('target@example.test', 'temporary-pass-1');
  assert.equal((await target.post('/api/v1/auth/change-password', { current: 'temporary-pass-1', new: 'the-targets-own' })).statusCode, 200);
  assert.equal((await admin.post('/api/v1/orgs/active/invites', { email: 'target@example.test' })).statusCode, 201);
  return { owner, created, target, token: mail.token('target@example.test', 'accept-invite') };
}

test('a reset whose target joined another organization while the temporary password was hashed is refused and changes nothing', async (t) => {
  const hasher = gatedHasher();
  const built = await buildWithAdmin(t, {}, { passwordHasher: hasher });
  const { owner, created, target, token } = await acmeMemberInvitedElsewhere(built);

  const held = hasher.hold();
  const resetting = owner.post(`/api/v1/users/${created.user.id}/reset-password`);
  const release = await held;
  assert.equal((await target.post(`/api/v1/invites/${token}/accept`)).statusCode, 200);
  release();
  const reset = await resetting;
  // Checked as the password is written: the user now belongs to another organization, which Acme's owner cannot reach.
  assert.equal(reset.statusCode, 403, reset.body);
  assert.equal(json(reset).error.code, 'platform_admin_required');
  assert.equal((await target.get('/api/v1/auth/me')).statusCode, 200, 'the session the reset would have ended is alive');
  await new Browser(built.app, '203.0.113.21').login('target@example.test', 'the-targets-own');
});

test('a deletion whose target joined another organization after the reach was checked is refused and deletes nothing', async (t) => {
  // The deletion's write is held (the first write after `holdNextWrite`), so the target joins meanwhile.
  let gate: { held: () => void; released: Promise<void> } | null = null;
  const wrapStore = (store: Store): Store =>
    new Proxy(store, {
      get(target, prop) {
        if (prop === 'write') {
          return async <T>(fn: (sql: Sql) => T): Promise<T> => {
            const waiting = gate;
            gate = null;
            if (waiting) (waiting.held(), await waiting.released);
            return target.write(fn);
          };
        }
        const value = Reflect.get(target, prop, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  const built = await buildWithAdmin(t, {}, {}, wrapStore);
  const { owner, created, target, token } = await acmeMemberInvitedElsewhere(built);

  let release!: () => void;
  const held = new Promise<void>((resolve) => (gate = { held: resolve, released: new Promise<void>((go) => (release = go)) }));
  const deleting = owner.delete(`/api/v1/users/${created.user.id}`);
  await held;
  assert.equal((await target.post(`/api/v1/invites/${token}/accept`)).statusCode, 200);
  release();
  const deleted = await deleting;
  assert.equal(deleted.statusCode, 403, deleted.body);
  assert.equal(json(deleted).error.code, 'platform_admin_required');
  assert.equal((await target.get('/api/v1/auth/me')).statusCode, 200, 'the user and their session are there');
});

test('the last owner of an organization cannot be deleted; a platform admin cannot demote themself', async (t) => {
  const { app, admin } = await buildWithAdmin(t);
  const { id } = await makeUser(app, { email: 'solo@example.test' });
  const org = await newOrg(app, 'Solo', 'solo@example.test');
  const refused = await admin.delete(`/api/v1/users/${id}`);
  assert.equal(refused.statusCode, 409);
  assert.equal(json(refused).error.code, 'last_owner');
  assert.deepEqual(json(refused).error.details.orgIds, [org]);
  const adminId = json(await admin.get('/api/v1/auth/me')).user.id;
  assert.equal((await admin.patch(`/api/v1/users/${adminId}`, { role: 'member' })).statusCode, 400);
  // A user renames themself; a platform admin raises someone else.
  const { browser: named, id: namedId } = await makeUser(app, { email: 'named@example.test' });
  assert.equal(json(await named.patch(`/api/v1/users/${namedId}`, { name: 'Named Person' })).user.name, 'Named Person');
  assert.equal((await named.patch(`/api/v1/users/${namedId}`, { role: 'admin' })).statusCode, 403);
  assert.equal(json(await admin.patch(`/api/v1/users/${namedId}`, { role: 'admin' })).user.role, 'admin');
});

test('mass assignment: members cannot mint admin keys or raise their own role', async (t) => {
  const { app } = await buildWithAdmin(t);
  const { browser: member, id } = await makeUser(app, { email: 'plain@example.test' });
  assert.equal(json(await member.post('/api/v1/keys', { name: 'k', admin: true })).error.code, 'admin_required');
  assert.equal((await member.patch(`/api/v1/users/${id}`, { role: 'admin' })).statusCode, 403);
  assert.equal((await member.patch('/api/v1/orgs/active/members/' + id, { role: 'owner' })).statusCode, 403);
  assert.equal((await member.post('/api/v1/users', { email: 'friend@example.test', orgRole: 'owner' })).statusCode, 403);
  assert.equal((await member.post('/api/v1/auth/change-password', { current: 'a-good-password', new: 'another-pass', role: 'admin' })).statusCode, 400);
  const me = json(await member.get('/api/v1/auth/me'));
  assert.equal(me.user.role, 'member');
  assert.equal(me.org.role, 'member');
  assert.equal(me.admin, false);
});

test('password hashes a signed-in caller asks for are limited per caller (60 per 10 minutes); the operator is not', async (t) => {
  const { app, admin, clock } = await buildWithAdmin(t);
  const created: string[] = [];
  for (let i = 0; i < 58; i++) {
    const response = await admin.post('/api/v1/users', { email: `bulk${i}@example.test` });
    assert.equal(response.statusCode, 201, response.body);
    created.push(json(response).user.id);
  }
  for (let i = 0; i < 2; i++) assert.equal((await admin.post(`/api/v1/users/${created[0]}/reset-password`)).statusCode, 200);
  const refused = await admin.post(`/api/v1/users/${created[1]}/reset-password`);
  assert.equal(refused.statusCode, 429);
  assert.ok(Number(refused.headers['retry-after']) >= 1);
  assert.equal((await admin.post('/api/v1/users', { email: 'one-more@example.test' })).statusCode, 429);
  // Nothing was created or reset by the refused calls; the operator's token is not limited.
  assert.equal((await app.inject({ method: 'POST', url: `/api/v1/users/${created[1]}/reset-password`, headers: operator(BOOT) })).statusCode, 200);
  clock.advance(10 * 60_000 + 1_000);
  assert.equal((await admin.post('/api/v1/users', { email: 'one-more@example.test' })).statusCode, 201);
});

test('a user without an organization who renames themself, or is renamed by such a platform admin, leaves no audit row without a tenant', async (t) => {
  const { app, admin, services } = await buildWithAdmin(t);
  const acme = await newOrg(app, 'Acme', ADMIN.email);
  const { browser: loner, id: lonerId } = await makeUser(app, { email: 'loner@example.test' });
  const { id: acmeMemberId } = await makeUser(app, { email: 'acme-member@example.test', orgId: acme });
  const { browser: rootless, id: rootlessId } = await makeUser(app, { email: 'rootless@example.test', role: 'admin' });
  for (const id of [lonerId, rootlessId]) assert.equal((await admin.delete(`/api/v1/orgs/active/members/${id}`)).statusCode, 200);
  await loner.login('loner@example.test', 'a-good-password');
  await rootless.login('rootless@example.test', 'a-good-password');
  assert.equal(json(await loner.get('/api/v1/auth/me')).org, null);

  assert.equal((await loner.patch(`/api/v1/users/${lonerId}`, { name: 'Lone Ranger' })).statusCode, 200);
  assert.equal((await rootless.patch(`/api/v1/users/${acmeMemberId}`, { name: 'Renamed By Root' })).statusCode, 200);

  const rows = await services.store.read((sql) =>
    sql.all<{ tenant_id: string; target: string }>("SELECT tenant_id, target FROM audit_events WHERE action = 'user.update' ORDER BY seq"),
  );
  assert.deepEqual(rows.filter((row) => row.tenant_id === ''), []);
  // The rename of a member of Acme is Acme's to see; the loner's belongs to no organization, so no one's log holds it.
  assert.deepEqual(rows.map((row) => [row.tenant_id, row.target]), [[acme, acmeMemberId]]);
});

test("409 email_taken answers are limited per organization too, whatever the caller: an admin's many keys share one budget", async (t) => {
  const { app, clock } = await buildWithAdmin(t);
  const { browser: owner } = await makeUser(app, { email: 'owner@probe.test' });
  const probe = await newOrg(app, 'Probe', 'owner@probe.test');
  await owner.post('/api/v1/orgs/switch', { orgId: probe });
  // Addresses with an account elsewhere (the default organization), which the prober cannot see.
  for (let i = 0; i < 3; i++) await makeUser(app, { email: `known${i}@example.test` });
  const keys: string[] = [];
  for (let i = 0; i < 3; i++) {
    const created = await owner.post('/api/v1/keys', { name: `probe-${i}`, admin: true });
    assert.equal(created.statusCode, 201, created.body);
    keys.push(json(created).token);
  }
  const create = (key: string, email: string) => app.inject({ method: 'POST', url: '/api/v1/users', headers: bearer(key), payload: { email } });
  // Created users do not count: only answers that tell an address has an account do.
  for (let i = 0; i < 5; i++) assert.equal((await create(keys[i % 3]!, `fresh${i}@probe.test`)).statusCode, 201);
  // Each key stays far below its own 60 hashes, but the organization's 20 e-mail-taken answers are spent together.
  const statuses: number[] = [];
  for (let i = 0; i < 21; i++) statuses.push((await create(keys[i % 3]!, `known${i % 3}@example.test`)).statusCode);
  assert.deepEqual(statuses, [...Array(20).fill(409), 429]);
  // Past it every creation is refused, an unknown address too (a 201 would answer the same question), by any key or
  // the owner's session; nothing is created.
  const fresh = await owner.post('/api/v1/keys', { name: 'probe-new', admin: true });
  const refused = await create(json(fresh).token, 'unknown@probe.test');
  assert.equal(refused.statusCode, 429);
  assert.equal(json(refused).error.code, 'rate_limited');
  assert.ok(Number(refused.headers['retry-after']) >= 1);
  assert.equal((await owner.post('/api/v1/users', { email: 'known0@example.test' })).statusCode, 429);
  assert.equal(json(await app.inject({ url: '/api/v1/users?email=unknown@probe.test', headers: operator(BOOT) })).users.length, 0);
  // Another organization, and the operator, are not held by it.
  assert.equal((await app.inject({ method: 'POST', url: '/api/v1/users', headers: operator(BOOT, probe), payload: { email: 'known1@example.test' } })).statusCode, 409);
  assert.equal((await app.inject({ method: 'POST', url: '/api/v1/users', headers: operator(BOOT), payload: { email: 'other@example.test' } })).statusCode, 201);
  clock.advance(10 * 60_000 + 1_000);
  assert.equal((await create(keys[0]!, 'unknown@probe.test')).statusCode, 201, 'the window passes');
});

test('user.update rows: a patch that changes nothing records nothing; of two identical role changes at once one is recorded, from the role it replaced', async (t) => {
  const { app, services } = await buildWithAdmin(t);
  const { id } = await makeUser(app, { email: 'plain@example.test' });
  const rows = async () =>
    (await services.store.read((sql) => sql.all<{ details_json: string }>("SELECT details_json FROM audit_events WHERE action = 'user.update' AND target = ? ORDER BY seq", [id]))).map(
      (row) => JSON.parse(row.details_json),
    );
  const patch = (payload: Record<string, string>) => app.inject({ method: 'PATCH', url: `/api/v1/users/${id}`, headers: operator(BOOT), payload });
  const { name } = (await services.store.read((sql) => sql.get<{ name: string }>('SELECT name FROM users WHERE id = ?', [id])))!;
  for (const unchanged of [{ role: 'member' }, { name }, { name, role: 'member' }] as Array<Record<string, string>>) {
    const answer = await patch(unchanged);
    assert.equal(answer.statusCode, 200, answer.body);
  }
  assert.deepEqual(await rows(), [], 'nothing changed, nothing recorded');

  const answers = await Promise.all([patch({ role: 'admin' }), patch({ role: 'admin' })]);
  for (const answer of answers) assert.equal(json(answer).user.role, 'admin', answer.body);
  assert.deepEqual(await rows(), [{ from: 'member', role: 'admin' }]);
  await patch({ name: 'Renamed', role: 'admin' });
  assert.deepEqual((await rows()).at(-1), { name: 'Renamed' }, 'only what changed');
});

test("a platform admin's changes to a member of another organization are in that organization's log too, and both chains verify", async (t) => {
  const { app, admin: root } = await buildWithAdmin(t);
  const { browser: ada } = await makeUser(app, { email: 'ada@example.test' });
  const acme = await newOrg(app, 'Acme', 'ada@example.test');
  const { id: bobId } = await makeUser(app, { email: 'bob@example.test', orgId: acme });
  assert.equal((await ada.post('/api/v1/orgs/switch', { orgId: acme })).statusCode, 200);

  // Root acts from the default organization, of which Bob is no member.
  assert.equal((await root.post(`/api/v1/users/${bobId}/reset-password`)).statusCode, 200);
  assert.equal((await root.patch(`/api/v1/users/${bobId}`, { role: 'admin' })).statusCode, 200);
  assert.equal((await root.patch(`/api/v1/users/${bobId}`, { role: 'member', name: 'Robert' })).statusCode, 200);
  assert.equal((await root.delete(`/api/v1/users/${bobId}`)).statusCode, 200);

  const rootId = json(await root.get('/api/v1/auth/me')).user.id;
  const aboutBob = async (browser: Browser) => {
    const answer = json(await browser.get('/api/v1/audit?limit=500&verify=true'));
    assert.equal(answer.integrity.ok, true);
    return answer.events
      .filter((event: { target: string | null }) => event.target === bobId)
      .reverse()
      .map((event: { action: string; actor: Record<string, string>; details: Record<string, unknown> }) => [event.action, event.actor.userId ?? event.actor.kind, event.details]);
  };
  const changes = [
    ['user.reset_password', rootId, { email: 'bob@example.test' }],
    ['user.update', rootId, { from: 'member', role: 'admin' }],
    ['user.update', rootId, { name: 'Robert', from: 'admin', role: 'member' }],
    ['user.delete', rootId, { email: 'bob@example.test' }],
  ];
  // Acme's log, which its owner reads: Bob's creation there (by the operator) and first password change, then what
  // root did to him.
  assert.deepEqual(await aboutBob(ada), [
    ['user.create', 'bootstrap', { email: 'bob@example.test', role: 'member', orgRole: 'member' }],
    ['user.password_change', bobId, {}],
    ...changes,
  ]);
  // The caller's own log keeps them as before.
  assert.deepEqual(await aboutBob(root), changes);
});
