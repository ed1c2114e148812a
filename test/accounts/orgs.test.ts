/** Organizations (SPEC 3, 4.5; docs/accounts.md "Organizations"): every state-table row, scoping, deletion cascade. */
import assert from 'node:assert/strict';
import test from 'node:test';
import type { FastifyInstance } from 'fastify';
import { bearer, json } from '../support/build.ts';
import { ADMIN, BOOT, Browser, buildWithAdmin, makeUser, operator } from '../support/accounts.ts';
import { afterRead } from '../support/counting-store.ts';

const CHAT = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello org' }] };

async function keyIn(app: FastifyInstance, orgId: string, admin = false): Promise<{ id: string; token: string }> {
  const response = json(await app.inject({ method: 'POST', url: '/api/v1/keys', headers: operator(BOOT, orgId), payload: { name: 'k', admin } }));
  return { id: response.key.id, token: response.token };
}

test('a session creates organizations, lists them with roles and the active flag, and switches', async (t) => {
  const { app, services } = await buildWithAdmin(t);
  const { browser: ada } = await makeUser(app, { email: 'ada@example.test' });
  const created = await ada.post('/api/v1/orgs', { name: '  Analytical Engines  ' });
  assert.equal(created.statusCode, 201);
  const org = json(created).org;
  assert.deepEqual({ name: org.name, role: org.role, active: org.active }, { name: 'Analytical Engines', role: 'owner', active: true });
  // The new organization became active.
  assert.deepEqual(json(await ada.get('/api/v1/auth/me')).org, { id: org.id, name: 'Analytical Engines', role: 'owner' });
  const listed = json(await ada.get('/api/v1/orgs'));
  assert.deepEqual(listed.orgs.map((o: any) => [o.name, o.role, o.active]), [['Default', 'member', false], ['Analytical Engines', 'owner', true]]);
  assert.deepEqual(listed.pagination, { limit: 50, offset: 0, total: 2, hasMore: false });
  assert.equal(json(await ada.get('/api/v1/orgs?limit=1&offset=1')).orgs[0].name, 'Analytical Engines');

  // Switch by either field name; conflicting names are 400.
  assert.equal(json(await ada.post('/api/v1/orgs/switch', { tenantId: 'default' })).org.id, 'default');
  assert.equal(json(await ada.get('/api/v1/auth/me')).org.id, 'default');
  assert.equal(json(await ada.post('/api/v1/orgs/switch', { orgId: org.id })).org.id, org.id);
  assert.equal((await ada.post('/api/v1/orgs/switch', { orgId: org.id, tenantId: 'default' })).statusCode, 400);
  assert.equal((await ada.post('/api/v1/orgs/switch', {})).statusCode, 400);
  const actions = await services.store.read((sql) =>
    sql.all<{ action: string; tenant_id: string }>("SELECT action, tenant_id FROM audit_events WHERE action IN ('org.create', 'org.switch') ORDER BY created_at, seq"),
  );
  assert.deepEqual(actions.map((a) => a.action), ['org.create', 'org.switch', 'org.switch']);
  // Name rules.
  assert.equal((await ada.post('/api/v1/orgs', { name: '   ' })).statusCode, 400);
  assert.equal((await ada.post('/api/v1/orgs', { name: 'x'.repeat(101) })).statusCode, 400);
  assert.equal((await ada.post('/api/v1/orgs', { name: 'Mine', ownerEmail: ADMIN.email })).statusCode, 400);
});

test('switching to an organization the caller is not a member of is 403, also for unknown ids', async (t) => {
  const { app, admin } = await buildWithAdmin(t);
  const { browser: ada } = await makeUser(app, { email: 'ada@example.test' });
  const other = json(await admin.post('/api/v1/orgs', { name: 'Not Ada' })).org.id;
  for (const orgId of [other, 'org_doesnotexist']) {
    const response = await ada.post('/api/v1/orgs/switch', { orgId });
    assert.equal(response.statusCode, 403);
    assert.equal(json(response).error.code, 'not_a_member');
  }
  assert.equal(json(await ada.get('/api/v1/auth/me')).org.id, 'default');
});

test('operators list every organization and act in one with X-Svc-Tenant; others may not send it', async (t) => {
  const { app } = await buildWithAdmin(t);
  const acme = json(await app.inject({ method: 'POST', url: '/api/v1/orgs', headers: bearer(BOOT), payload: { name: 'Acme', ownerEmail: ADMIN.email } })).org.id;
  const all = json(await app.inject({ url: '/api/v1/orgs', headers: bearer(BOOT) })).orgs;
  assert.deepEqual(all.map((o: any) => [o.name, o.role, o.active]), [['Default', null, true], ['Acme', null, false]]);
  const active = json(await app.inject({ url: '/api/v1/orgs/active', headers: operator(BOOT, acme) }));
  assert.equal(active.org.name, 'Acme');
  assert.equal((await app.inject({ url: '/api/v1/orgs/active', headers: operator(BOOT, 'org_nope') })).statusCode, 404);
  // An API key is pinned to its tenant; a session switches instead.
  const key = await keyIn(app, acme, true);
  assert.equal(json(await app.inject({ url: '/api/v1/orgs', headers: bearer(key.token) })).orgs[0].id, acme);
  const forged = await app.inject({ url: '/api/v1/keys', headers: { ...bearer(key.token), 'x-svc-tenant': 'default' } });
  assert.equal(forged.statusCode, 403);
  const admin = new Browser(app);
  await admin.login(ADMIN.email, ADMIN.password);
  assert.equal((await admin.get('/api/v1/keys', { 'x-svc-tenant': acme })).statusCode, 403);
  // An operator creating an organization must name an existing owner.
  assert.equal((await app.inject({ method: 'POST', url: '/api/v1/orgs', headers: bearer(BOOT), payload: { name: 'X' } })).statusCode, 400);
  assert.equal((await app.inject({ method: 'POST', url: '/api/v1/orgs', headers: bearer(BOOT), payload: { name: 'X', ownerEmail: 'ghost@x.test' } })).statusCode, 404);
});

test('gateway traffic naming another organization in X-Svc-Tenant is refused, not recorded in the credential\'s own', async (t) => {
  const { app } = await buildWithAdmin(t);
  const acme = json(await app.inject({ method: 'POST', url: '/api/v1/orgs', headers: bearer(BOOT), payload: { name: 'Acme', ownerEmail: ADMIN.email } })).org.id;
  // The header picks the organization of management calls only: on /v1/* it was dropped without a word, and the
  // operator's chat meant for Acme was run, cached and billed in the default organization.
  const misrouted = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: operator(BOOT, acme), payload: CHAT });
  assert.equal(misrouted.statusCode, 400, misrouted.body);
  assert.equal(json(misrouted).error.type, 'invalid_request_error');
  assert.match(json(misrouted).error.message, /X-Svc-Tenant/);
  const key = await keyIn(app, acme);
  assert.equal((await app.inject({ url: '/v1/models', headers: { ...bearer(key.token), 'x-svc-tenant': 'default' } })).statusCode, 400);
  // Naming the credential's own organization changes nothing, as on the management API.
  assert.equal((await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: operator(BOOT, 'default'), payload: CHAT })).statusCode, 200);
  assert.equal((await app.inject({ url: '/v1/models', headers: { ...bearer(key.token), 'x-svc-tenant': acme } })).statusCode, 200);
  const runs = json(await app.inject({ url: '/api/v1/runs', headers: operator(BOOT, acme) })).runs;
  assert.equal(runs.length, 0);
});

test('the active organization: members, role, seats, plan; rename by owner/admin only', async (t) => {
  const { app, admin, services } = await buildWithAdmin(t);
  const { browser: member } = await makeUser(app, { email: 'm@example.test' });
  await admin.post('/api/v1/orgs/active/invites', { email: 'pending@example.test' });
  const active = json(await admin.get('/api/v1/orgs/active'));
  assert.equal(active.org.name, 'Default');
  assert.equal(active.role, 'owner');
  assert.deepEqual(active.org.plan, { effective: 'free', base: 'free', trial: null });
  assert.deepEqual(active.members.map((m: any) => [m.email, m.role]), [[ADMIN.email, 'owner'], ['m@example.test', 'member']]);
  assert.deepEqual(active.seats, { members: 2, pendingInvites: 1, used: 3 });
  assert.equal(json(await member.get('/api/v1/orgs/active')).role, 'member');

  const denied = await member.patch('/api/v1/orgs/active', { name: 'Mine now' });
  assert.equal(denied.statusCode, 403);
  for (const name of ['Head\u0000quarters', 'Head\u202Equarters', 'Head\nquarters']) {
    const refused = await admin.patch('/api/v1/orgs/active', { name });
    assert.equal(refused.statusCode, 400, JSON.stringify(name));
    // A NUL is refused with the body (no management body may hold one), the others by the name's own rule.
    if (!name.includes('\u0000')) assert.equal(json(refused).error.details.param, 'name');
  }
  assert.equal(json(await admin.get('/api/v1/orgs/active')).org.name, 'Default');
  const renamed = await admin.patch('/api/v1/orgs/active', { name: 'Headquarters' });
  assert.equal(json(renamed).org.name, 'Headquarters');
  const rename = await services.store.read((sql) => sql.get<{ details_json: string }>("SELECT details_json FROM audit_events WHERE action = 'org.rename'"));
  assert.deepEqual(JSON.parse(rename!.details_json), { from: 'Default', to: 'Headquarters' });
});

test('member removal: owner only, 409 for the last owner, and the removed member is out on the next request', async (t) => {
  const { app, admin, services } = await buildWithAdmin(t);
  const acme = json(await admin.post('/api/v1/orgs', { name: 'Acme' })).org.id; // admin is owner, Acme active
  const { browser: orgAdmin } = await makeUser(app, { email: 'admin@acme.test', orgId: acme, orgRole: 'admin' });
  const { browser: member, id: memberId } = await makeUser(app, { email: 'member@acme.test', orgId: acme });
  await orgAdmin.post('/api/v1/orgs/switch', { orgId: acme });
  await member.post('/api/v1/orgs/switch', { orgId: acme });
  const adminId = json(await admin.get('/api/v1/auth/me')).user.id;

  const byAdmin = await orgAdmin.delete(`/api/v1/orgs/active/members/${memberId}`);
  assert.equal(byAdmin.statusCode, 403);
  assert.equal(json(byAdmin).error.code, 'owner_required');
  assert.equal((await member.delete(`/api/v1/orgs/active/members/${memberId}`)).statusCode, 403);
  const lastOwner = await admin.delete(`/api/v1/orgs/active/members/${adminId}`);
  assert.equal(lastOwner.statusCode, 409);
  assert.equal(json(lastOwner).error.code, 'last_owner');
  assert.equal(json(await admin.patch(`/api/v1/orgs/active/members/${adminId}`, { role: 'admin' })).error.code, 'last_owner');

  const stale = member.cookie;
  const removed = await admin.delete(`/api/v1/orgs/active/members/${memberId}`);
  assert.equal(removed.statusCode, 200);
  assert.ok(!json(removed).members.some((m: any) => m.userId === memberId));
  // The very next request with the old cookie is refused: every session of the removed member was ended.
  assert.equal((await app.inject({ url: '/api/v1/orgs/active', headers: { cookie: `svc_session=${stale}` } })).statusCode, 401);
  assert.equal((await admin.delete(`/api/v1/orgs/active/members/${memberId}`)).statusCode, 404);
  const audit = await services.store.read((sql) =>
    sql.get<{ target: string; tenant_id: string }>("SELECT target, tenant_id FROM audit_events WHERE action = 'org.member_remove'"),
  );
  assert.deepEqual(audit, { target: memberId, tenant_id: acme });
  // An owner may leave while another owner remains.
  const { id: coOwner } = await makeUser(app, { email: 'co@acme.test', orgId: acme, orgRole: 'owner' });
  assert.ok(coOwner);
  assert.equal((await admin.delete(`/api/v1/orgs/active/members/${adminId}`)).statusCode, 200);
});

test('an owner who changes their own role is answered with the role they now have', async (t) => {
  const { app } = await buildWithAdmin(t);
  const { browser: owner, id: ownerId } = await makeUser(app, { email: 'owner@acme.test' });
  const acme = json(await owner.post('/api/v1/orgs', { name: 'Acme' })).org.id;
  await makeUser(app, { email: 'co@acme.test', orgId: acme, orgRole: 'owner' });

  const demoted = await owner.patch(`/api/v1/orgs/active/members/${ownerId}`, { role: 'member' });
  assert.equal(demoted.statusCode, 200, demoted.body);
  assert.equal(json(demoted).members.find((m: { userId: string }) => m.userId === ownerId).role, 'member');
  assert.equal(json(demoted).role, 'member', 'the answer says what the next read says');
  assert.equal(json(await owner.get('/api/v1/orgs/active')).role, 'member');
});

test('a stale active organization falls back to the first membership on the next request', async (t) => {
  const { app } = await buildWithAdmin(t);
  const { browser: ada } = await makeUser(app, { email: 'ada@example.test' });
  const own = json(await ada.post('/api/v1/orgs', { name: 'Ada Co' })).org.id;
  assert.equal(json(await ada.get('/api/v1/auth/me')).org.id, own);
  // The organization disappears under the session (its owner deletes it from another browser).
  const other = new Browser(app, '203.0.113.50');
  await other.login('ada@example.test', 'a-good-password');
  await other.post('/api/v1/orgs/switch', { orgId: own });
  assert.equal((await other.delete('/api/v1/orgs/active', { confirm: true })).statusCode, 200);
  const me = json(await ada.get('/api/v1/auth/me'));
  assert.equal(me.org.id, 'default');
  assert.equal(me.org.role, 'member');
  assert.equal(json(await ada.get('/api/v1/orgs/active')).org.id, 'default');
});

test("a stale active organization's fallback, recorded after a switch the session made meanwhile, leaves the switch", async (t) => {
  // The fallback is written with the ledger's next commit; a switch commits at once. Armed once Ada's organization is
  // gone: her request reads its memberships, then her switch (same session) commits before the fallback is recorded.
  const race = afterRead((read) => read.text.includes('FROM org_members m JOIN tenants t'));
  const { app, services } = await buildWithAdmin(t, {}, {}, race.wrap);
  const { browser: ada } = await makeUser(app, { email: 'ada@example.test' });
  const gone = json(await ada.post('/api/v1/orgs', { name: 'Gone Co' })).org.id;
  const kept = json(await ada.post('/api/v1/orgs', { name: 'Kept Co' })).org.id;
  await ada.post('/api/v1/orgs/switch', { orgId: gone });
  const other = new Browser(app, '203.0.113.51');
  await other.login('ada@example.test', 'a-good-password');
  await other.post('/api/v1/orgs/switch', { orgId: gone });
  assert.equal((await other.delete('/api/v1/orgs/active', { confirm: true })).statusCode, 200);
  let switched: Awaited<ReturnType<FastifyInstance['inject']>> | undefined;
  race.arm(async () => (switched = await ada.post('/api/v1/orgs/switch', { orgId: kept })));
  await ada.get('/api/v1/auth/me');
  assert.ok(race.fired());
  assert.equal(switched?.statusCode, 200, switched?.body);
  await services.store.flush();
  assert.equal(json(await ada.get('/api/v1/auth/me')).org.id, kept, 'the switch stands');
});

test('a user without any organization reaches only the account endpoints', async (t) => {
  const { app, admin } = await buildWithAdmin(t);
  const { browser: ada, id } = await makeUser(app, { email: 'ada@example.test' });
  await admin.delete(`/api/v1/orgs/active/members/${id}`);
  await ada.login('ada@example.test', 'a-good-password');
  const me = json(await ada.get('/api/v1/auth/me'));
  assert.equal(me.org, null);
  const keys = await ada.get('/api/v1/keys');
  assert.equal(keys.statusCode, 403);
  assert.equal(json(keys).error.code, 'no_organization');
  assert.deepEqual(json(await ada.get('/api/v1/orgs')).orgs, []);
  const created = await ada.post('/api/v1/orgs', { name: 'Fresh Start' });
  assert.equal(created.statusCode, 201);
  assert.equal((await ada.get('/api/v1/keys')).statusCode, 200);
});

test('org deletion: owner only, confirm required, default refused; cascade, audit kept, runs purged, users kept', async (t) => {
  const { app, admin, services } = await buildWithAdmin(t);
  const acme = json(await admin.post('/api/v1/orgs', { name: 'Acme' })).org.id;
  const { browser: member } = await makeUser(app, { email: 'member@acme.test', orgId: acme, orgRole: 'admin' });
  await member.post('/api/v1/orgs/switch', { orgId: acme });
  const key = await keyIn(app, acme, true);
  await admin.post('/api/v1/orgs/active/invites', { email: 'later@acme.test' });
  await app.inject({ method: 'PUT', url: '/api/v1/settings', headers: bearer(key.token), payload: { key: 'retention_days', value: 7 } });
  const run = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: bearer(key.token), payload: CHAT });
  assert.equal(run.statusCode, 200);
  const runId = String(run.headers['x-svc-run-id']);
  await services.store.flush();

  assert.equal(json(await member.delete('/api/v1/orgs/active', { confirm: true })).error.code, 'owner_required');
  assert.equal(json(await admin.delete('/api/v1/orgs/active', {})).error.code, 'confirm_required');
  assert.equal(json(await admin.delete('/api/v1/orgs/active', { confirm: 'yes' })).error.code, 'confirm_required');
  const defaultDelete = await app.inject({ method: 'DELETE', url: '/api/v1/orgs/active', headers: bearer(BOOT), payload: { confirm: true } });
  assert.equal(json(defaultDelete).error.code, 'default_org');
  assert.equal(defaultDelete.statusCode, 400);

  const deleted = await admin.delete('/api/v1/orgs/active', { confirm: true });
  assert.deepEqual(json(deleted), { deleted: true, id: acme });
  await services.retention.purgeDeleted();

  const remaining = (table: string, column = 'tenant_id') =>
    services.store.read((sql) => sql.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${table} WHERE ${column} = ?`, [acme])!.n);
  assert.equal(await remaining('tenants', 'id'), 0);
  for (const table of ['org_members', 'org_invites', 'api_keys', 'settings', 'runs', 'run_rollups', 'cache_entries', 'run_replays']) {
    assert.equal(await remaining(table), 0, table);
  }
  const events = await services.store.read((sql) => sql.get<{ n: number }>('SELECT COUNT(*) AS n FROM run_events WHERE run_id = ?', [runId])!.n);
  assert.equal(events, 0);
  assert.equal((await services.store.read((sql) => sql.all('SELECT * FROM tenant_purges'))).length, 0);
  // The key is gone, the users stay, the audit log of the organization (with org.delete) is kept and intact.
  assert.equal((await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: bearer(key.token), payload: CHAT })).statusCode, 401);
  // The member belonged to Acme only: signed in still, without an organization.
  const alone = json(await member.get('/api/v1/auth/me'));
  assert.equal(alone.org, null);
  // Still their own account: they may rename themself.
  const renamed = await member.patch(`/api/v1/users/${alone.user.id}`, { name: 'On My Own' });
  assert.equal(renamed.statusCode, 200, renamed.body);
  assert.equal(json(await member.get('/api/v1/auth/me')).user.name, 'On My Own');
  const actions = await services.store.read((sql) => sql.all<{ action: string }>('SELECT action FROM audit_events WHERE tenant_id = ? ORDER BY seq', [acme]));
  assert.ok(actions.some((a) => a.action === 'org.delete'));
  assert.ok(actions.some((a) => a.action === 'org.create'));
  const integrity = await services.audit.verify({ ...(await services.identity.resolve({ surface: 'api', authorization: `Bearer ${BOOT}`, localSocket: false, appHeader: undefined, agentHeader: undefined, subjectHeader: undefined })), tenantId: acme });
  assert.equal(integrity.ok, true);
  assert.equal(actions.at(-1)!.action, 'org.delete');
  // Kept, and the operator reads it (docs/accounts.md "Deletion"; test/api/audit-deleted-org.test.ts has who else).
  const keptLog = json(await app.inject({ url: '/api/v1/audit?verify=true', headers: { ...bearer(BOOT), 'x-svc-tenant': acme } }));
  assert.equal(keptLog.events[0].action, 'org.delete');
  assert.equal(keptLog.integrity.ok, true);
  // The admin (not a member of anything else but default) lands back in default.
  assert.equal(json(await admin.get('/api/v1/auth/me')).org.id, 'default');
});

test('a deleted organization with many runs is purged in batches, also after a restart', async (t) => {
  const { app, admin, services } = await buildWithAdmin(t);
  const acme = json(await admin.post('/api/v1/orgs', { name: 'Big' })).org.id;
  const key = await keyIn(app, acme);
  for (let i = 0; i < 450; i++) {
    await services.store.write((sql) =>
      sql.run("INSERT INTO runs (id, tenant_id, mode, wire, model, status, created_at, last_hash) VALUES (?, ?, 'optimize', 'chat_completions', 'm', 'completed', ?, 'h')", [
        `run_bulk${i}`,
        acme,
        Date.now(),
      ]),
    );
  }
  assert.ok(key.id);
  // Recorded as pending, as after a crash right after the deletion: the next pass purges it.
  await services.store.write((sql) => {
    sql.run('DELETE FROM tenants WHERE id = ?', [acme]);
    sql.run('INSERT INTO tenant_purges (tenant_id, deleted_at) VALUES (?, ?)', [acme, Date.now()]);
  });
  const report = await services.retention.runOnce();
  assert.equal(report.orgsPurged, 1);
  assert.equal(report.runsDeleted, 450);
  assert.equal((await services.store.read((sql) => sql.get<{ n: number }>('SELECT COUNT(*) AS n FROM runs WHERE tenant_id = ?', [acme])))!.n, 0);
});

test('cross-tenant ids are 404: keys, invitations, runs and members of another organization', async (t) => {
  const { app, admin } = await buildWithAdmin(t);
  const acme = json(await admin.post('/api/v1/orgs', { name: 'Acme' })).org.id;
  const acmeKey = await keyIn(app, acme, true);
  const acmeRun = String((await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: bearer(acmeKey.token), payload: CHAT })).headers['x-svc-run-id']);
  const invite = json(await admin.post('/api/v1/orgs/active/invites', { email: 'x@acme.test' })).invite.id;
  const { browser: other, id: otherId } = await makeUser(app, { email: 'owner@other.test' });
  await other.post('/api/v1/orgs', { name: 'Other' }); // other owns Other, active
  const adminId = json(await admin.get('/api/v1/auth/me')).user.id;

  assert.equal((await other.patch(`/api/v1/keys/${acmeKey.id}`, { mode: 'observe' })).statusCode, 404);
  assert.equal((await other.post(`/api/v1/keys/${acmeKey.id}/revoke`)).statusCode, 404);
  assert.equal((await other.post(`/api/v1/orgs/active/invites/${invite}/revoke`)).statusCode, 404);
  assert.equal((await other.get(`/api/v1/runs/${acmeRun}`)).statusCode, 404);
  assert.equal((await other.delete(`/api/v1/orgs/active/members/${adminId}`)).statusCode, 404);
  assert.equal((await other.patch(`/api/v1/orgs/active/members/${adminId}`, { role: 'member' })).statusCode, 404);
  assert.ok(otherId);
  // And nothing changed for Acme.
  assert.equal((await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: bearer(acmeKey.token), payload: CHAT })).statusCode, 200);
});

test('onboarding: counts, hasRuns, dismissal by an admin', async (t) => {
  const { app, admin, services } = await buildWithAdmin(t);
  const acme = json(await admin.post('/api/v1/orgs', { name: 'Acme' })).org.id;
  const { browser: member } = await makeUser(app, { email: 'm@acme.test', orgId: acme });
  await member.post('/api/v1/orgs/switch', { orgId: acme });
  assert.deepEqual(json(await admin.get('/api/v1/orgs/active/onboarding')), { workflowCount: 0, agentCount: 0, hasRuns: false, dismissed: false });
  const key = await keyIn(app, acme);
  await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: bearer(key.token), payload: CHAT });
  await services.store.flush(); // the run commits within the ledger's deferred window
  assert.equal(json(await member.get('/api/v1/orgs/active/onboarding')).hasRuns, true);
  assert.equal(json(await member.post('/api/v1/orgs/active/onboarding/dismiss')).error.code, 'admin_required');
  // An app-pinned admin key has no rank in its organization: told so, as account administration tells it.
  const pinned = json(await app.inject({ method: 'POST', url: '/api/v1/keys', headers: bearer(BOOT), payload: { name: 'p', admin: true, appId: 'app-a' } })).token;
  const byPinned = await app.inject({ method: 'POST', url: '/api/v1/orgs/active/onboarding/dismiss', headers: bearer(pinned) });
  assert.equal(byPinned.statusCode, 403);
  assert.equal(json(byPinned).error.code, 'tenant_admin_required');
  assert.equal(json(await admin.get('/api/v1/orgs/active/onboarding')).dismissed, false);
  assert.equal(json(await admin.post('/api/v1/orgs/active/onboarding/dismiss')).dismissed, true);
  assert.equal(json(await member.get('/api/v1/orgs/active/onboarding')).dismissed, true);
});

test("the active organization's member list (names, e-mail addresses) is for sessions and admin identities, not for SDK keys", async (t) => {
  const { app } = await buildWithAdmin(t);
  await makeUser(app, { email: 'private.person@example.test' });
  const plain = await keyIn(app, 'default');
  const pinned = json(await app.inject({ method: 'POST', url: '/api/v1/keys', headers: bearer(BOOT), payload: { name: 'p', admin: true, appId: 'app-a' } })).token;
  for (const [label, token, code] of [['non-admin key', plain.token, 'admin_required'], ['app-pinned admin key', pinned, 'tenant_admin_required']] as const) {
    const response = await app.inject({ url: '/api/v1/orgs/active', headers: bearer(token) });
    assert.equal(response.statusCode, 403, `${label}: ${response.body.slice(0, 200)}`);
    assert.equal(json(response).error.code, code);
    assert.ok(!response.body.includes('private.person'), label);
  }
  const admin = await keyIn(app, 'default', true);
  assert.equal((await app.inject({ url: '/api/v1/orgs/active', headers: bearer(admin.token) })).statusCode, 200);
  assert.equal((await app.inject({ url: '/api/v1/orgs/active', headers: bearer(BOOT) })).statusCode, 200);
  const { browser: member } = await makeUser(app, { email: 'member@example.test' });
  assert.ok(json(await member.get('/api/v1/orgs/active')).members.some((m: { email: string }) => m.email === 'private.person@example.test'));
});

test('an organization created for a user being deleted at the same moment: created (and the deletion refused, its last owner) or refused as the deletion left it, never a 500', async (t) => {
  const { app, services } = await buildWithAdmin(t);
  for (let round = 0; round < 4; round++) {
    const self = await makeUser(app, { email: `self${round}@example.test` }, `198.51.100.${round + 1}`);
    const named = await makeUser(app, { email: `named${round}@example.test` }, `198.51.100.${round + 101}`);
    // All sent before any is awaited: each creation reads its owner before the deletion is written.
    const [selfDeleted, selfCreated, namedDeleted, namedCreated] = await Promise.all([
      app.inject({ method: 'DELETE', url: `/api/v1/users/${self.id}`, headers: operator(BOOT) }),
      self.browser.post('/api/v1/orgs', { name: `Own ${round}` }),
      app.inject({ method: 'DELETE', url: `/api/v1/users/${named.id}`, headers: operator(BOOT) }),
      app.inject({ method: 'POST', url: '/api/v1/orgs', headers: operator(BOOT), payload: { name: `For ${round}`, ownerEmail: `named${round}@example.test` } }),
    ]);
    for (const [deleted, created, refusal] of [
      [selfDeleted, selfCreated, 401],
      [namedDeleted, namedCreated, 404],
    ] as const) {
      const name = round + (created === selfCreated ? ' own' : ' for');
      if (created.statusCode === 201) {
        assert.equal(deleted.statusCode, 409, `${name}: ${deleted.body}`);
        assert.equal(json(deleted).error.code, 'last_owner');
        const owners = await services.store.read((sql) => sql.all("SELECT 1 FROM org_members WHERE tenant_id = ? AND role = 'owner'", [json(created).org.id]));
        assert.equal(owners.length, 1);
      } else {
        assert.equal(created.statusCode, refusal, `${name}: ${created.body}`);
        assert.equal(deleted.statusCode, 200, `${name}: ${deleted.body}`);
      }
    }
    const orgs = await services.store.read((sql) => sql.all<{ id: string }>("SELECT id FROM tenants WHERE name IN (?, ?)", [`Own ${round}`, `For ${round}`]));
    const creates = await services.store.read((sql) => sql.all("SELECT 1 FROM audit_events WHERE action = 'org.create' AND target IN (SELECT id FROM tenants WHERE name IN (?, ?))", [`Own ${round}`, `For ${round}`]));
    assert.equal(orgs.length, [selfCreated, namedCreated].filter((r) => r.statusCode === 201).length);
    assert.equal(creates.length, orgs.length);
  }
});

test('a member role change records the role it replaced; to the role the member has it changes nothing and records no org.member_role row', async (t) => {
  const { app, admin, services } = await buildWithAdmin(t);
  const { id } = await makeUser(app, { email: 'same-role@example.test', orgRole: 'admin' });
  const roleRows = () =>
    services.store.read((sql) => sql.all<{ details_json: string }>("SELECT details_json FROM audit_events WHERE action = 'org.member_role' AND target = ?", [id]));
  const same = await admin.patch(`/api/v1/orgs/active/members/${id}`, { role: 'admin' });
  assert.equal(same.statusCode, 200, same.body);
  assert.equal((await roleRows()).length, 0);
  assert.equal((await admin.patch(`/api/v1/orgs/active/members/${id}`, { role: 'member' })).statusCode, 200);
  assert.equal((await admin.patch(`/api/v1/orgs/active/members/${id}`, { role: 'owner' })).statusCode, 200);
  // The role replaced beside the new one: a demotion reads apart from a promotion.
  assert.deepEqual(
    (await roleRows()).map((row) => JSON.parse(row.details_json)),
    [
      { from: 'admin', role: 'member' },
      { from: 'member', role: 'owner' },
    ],
  );
});

test('a switch by a user whose deletion commits once the session was found answers 401, as after the deletion, not 403', async (t) => {
  // The deletion lands right after the switch request's session lookup: the request is under way, its account gone.
  const race = afterRead((read) => read.text.includes('FROM sessions WHERE token_hash'));
  const { app, services } = await buildWithAdmin(t, {}, {}, race.wrap);
  const { browser: ada, id } = await makeUser(app, { email: 'ada@example.test' });
  let deleted: Awaited<ReturnType<FastifyInstance['inject']>> | undefined;
  race.arm(async () => (deleted = await app.inject({ method: 'DELETE', url: `/api/v1/users/${id}`, headers: operator(BOOT) })));
  const switched = await ada.post('/api/v1/orgs/switch', { orgId: 'default' });
  assert.ok(race.fired());
  assert.equal(deleted?.statusCode, 200, deleted?.body);
  assert.equal(switched.statusCode, 401, switched.body);
  assert.equal(json(switched).error.code, 'unauthorized');
  const switches = await services.store.read((sql) => sql.all("SELECT 1 FROM audit_events WHERE action = 'org.switch'"));
  assert.equal(switches.length, 0, 'no switch recorded for the deleted account');
});
