/**
 * Cross-organization and cross-role access on the management API (SPEC 7: a tenant-scoped record of another
 * organization is a 404 that says no more than an unknown id's; a role below the route's is a 403), and nothing of the
 * other organization changes. Other files cover /runs/:id, key mode and revoke, invitation revoke and member changes
 * by exact id (test/accounts/orgs.test.ts), run sub-resources across apps of one tenant
 * (test/evidence/run-evidence.test.ts) and query parameters naming another tenant (test/api/query-parameters.test.ts);
 * this one covers every route family naming another organization's ids, in the forms a guesser would try, every
 * admin-only write called by a member, and what an admin (a session, a tenant-wide admin key) may not do above its rank.
 */
import assert from 'node:assert/strict';
import test, { type TestContext } from 'node:test';
import { bearer, json } from '../support/build.ts';
import { BOOT, type Browser, buildWithAdmin, makeUser, operator } from '../support/accounts.ts';
import { writeRoutes } from '../support/routes.ts';
import type { Store } from '../../src/store/store.ts';

type Call = { method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE'; url: string; payload?: unknown };
type Caller = { label: string; send: (call: Call) => Promise<{ statusCode: number; body: string }> };

/**
 * Forms of a real id a guesser tries in a path: itself, upper-cased, with an encoded space after or before it, a prefix.
 * A %00 never reaches a route (the URL is refused first, test/http/request-target.test.ts).
 */
const forms = (id: string) => [id, id.toUpperCase(), `${id}%20`, `%20${id}`, id.slice(0, -3)];

/** Every row of `orgId` in every table that has a tenant column, its tenant row, and its users and their sessions. */
async function rowsOf(store: Store, orgId: string, userIds: string[]): Promise<string> {
  return store.read((sql) => {
    const tables = sql
      .all<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
      .map((table) => table.name)
      .filter((name) => sql.all<{ name: string }>('SELECT name FROM pragma_table_info(?)', [name]).some((column) => column.name === 'tenant_id'));
    const marks = userIds.map(() => '?').join(', ');
    // Rows in a stable order whatever the table's key (some are WITHOUT ROWID).
    const sorted = (rows: unknown[]) => rows.map((row) => JSON.stringify(row)).sort();
    return JSON.stringify({
      ...Object.fromEntries(tables.map((name) => [name, sorted(sql.all(`SELECT * FROM ${name} WHERE tenant_id = ?`, [orgId]))])),
      tenant: sorted(sql.all('SELECT * FROM tenants WHERE id = ?', [orgId])),
      users: sorted(sql.all(`SELECT * FROM users WHERE id IN (${marks})`, userIds)),
      sessions: sorted(sql.all(`SELECT * FROM sessions WHERE user_id IN (${marks})`, userIds)),
    });
  });
}

/**
 * Two organizations: Alpha (an owner, an admin key, a member and another member) and Bravo (an owner, a member, an
 * admin key, a run of its key, a pending invitation, a cached answer, a changed setting).
 */
async function twoOrganizations(t: TestContext) {
  const built = await buildWithAdmin(t);
  const { app, services } = built;
  const org = async (name: string, ownerEmail: string) =>
    json(await app.inject({ method: 'POST', url: '/api/v1/orgs', headers: bearer(BOOT), payload: { name, ownerEmail } })).org.id as string;
  const key = async (orgId: string, admin: boolean) =>
    json(await app.inject({ method: 'POST', url: '/api/v1/keys', headers: operator(BOOT, orgId), payload: { name: 'k', admin } }));
  const alphaOwner = await makeUser(app, { email: 'owner@alpha.test' });
  const bravoOwner = await makeUser(app, { email: 'owner@bravo.test' });
  const alpha = await org('Alpha', 'owner@alpha.test');
  const bravo = await org('Bravo', 'owner@bravo.test');
  const alphaMember = await makeUser(app, { email: 'member@alpha.test', orgId: alpha });
  const alphaOther = await makeUser(app, { email: 'other@alpha.test', orgId: alpha });
  const alphaAdmin = await makeUser(app, { email: 'admin@alpha.test', orgId: alpha, orgRole: 'admin' });
  const bravoMember = await makeUser(app, { email: 'member@bravo.test', orgId: bravo });
  // Each signs in to the organization the test is about (a session starts in its user's first one, Default).
  for (const [user, orgId] of [[alphaOwner, alpha], [alphaMember, alpha], [alphaOther, alpha], [alphaAdmin, alpha], [bravoOwner, bravo], [bravoMember, bravo]] as const) {
    assert.equal((await user.browser.post('/api/v1/orgs/switch', { orgId })).statusCode, 200);
  }
  const alphaKey = await key(alpha, true);
  const alphaPlainKey = await key(alpha, false);
  const bravoKey = await key(bravo, true);
  const chat = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'bravo asks' }] };
  const ran = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: bearer(bravoKey.token), payload: chat });
  assert.equal(ran.statusCode, 200);
  // The same question again: a cache hit, so Bravo has a cached answer an invalidation could take.
  await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: bearer(bravoKey.token), payload: chat });
  const invite = json(await bravoOwner.browser.post('/api/v1/orgs/active/invites', { email: 'new@bravo.test' })).invite.id as string;
  assert.equal((await bravoOwner.browser.request('PUT', '/api/v1/settings', { key: 'retention_days', value: 9 })).statusCode, 200);
  await services.store.flush();

  const viaBrowser = (label: string, browser: Browser): Caller => ({
    label,
    send: ({ method, url, payload }) => browser.request(method, url, payload ?? (method === 'GET' || method === 'DELETE' ? undefined : {})),
  });
  const viaKey = (label: string, token: string): Caller => ({
    label,
    send: ({ method, url, payload }) => app.inject({ method, url, headers: bearer(token), ...(payload !== undefined ? { payload: payload as object } : {}) }),
  });
  const bravoUsers = [bravoOwner.id, bravoMember.id];
  return {
    ...built,
    alpha,
    bravo,
    alphaOwner: viaBrowser('Alpha owner session', alphaOwner.browser),
    alphaOwnerId: alphaOwner.id,
    alphaAdmin: viaBrowser('Alpha admin session', alphaAdmin.browser),
    alphaAdminId: alphaAdmin.id,
    alphaAdminKey: viaKey('Alpha admin key', alphaKey.token),
    alphaMember: viaBrowser('Alpha member session', alphaMember.browser),
    alphaPlainKey: viaKey('Alpha non-admin key', alphaPlainKey.token),
    alphaKeyId: alphaKey.key.id as string,
    alphaOtherId: alphaOther.id,
    bravoRun: String(ran.headers['x-svc-run-id']),
    bravoKeyId: bravoKey.key.id as string,
    bravoInvite: invite,
    bravoMemberId: bravoMember.id,
    bravoOwnerId: bravoOwner.id,
    bravoRows: () => rowsOf(services.store, bravo, bravoUsers),
  };
}

/**
 * Each call, by each caller, answers 404 with the very body of the same call naming an id that exists nowhere: the
 * answer tells nothing of the other organization's record.
 */
async function assertInvisible(callers: Caller[], calls: Array<{ call: Call; unknown: Call }>) {
  for (const caller of callers) {
    for (const { call, unknown } of calls) {
      const label = `${caller.label}: ${call.method} ${call.url}`;
      const [response, baseline] = [await caller.send(call), await caller.send(unknown)];
      assert.equal(response.statusCode, 404, `${label}: ${response.body.slice(0, 300)}`);
      assert.equal(json(response).error.code, 'not_found', label);
      assert.equal(response.body, baseline.body, `${label}: answered unlike an unknown id`);
    }
  }
}

test("another organization's run is invisible in every run route, by its id in any form, and nothing of it changes", async (t) => {
  const s = await twoOrganizations(t);
  const before = await s.bravoRows();
  const runCalls = (id: string): Call[] => [
    ...['', '/events', '/route', '/integrity', '/economics', '/receipt', '/replay-bundle', '/evidence-packet'].map((sub): Call => ({ method: 'GET', url: `/api/v1/runs/${id}${sub}` })),
    { method: 'GET', url: `/api/v1/receipts/${id}` },
    { method: 'POST', url: `/api/v1/runs/${id}/feedback`, payload: { type: 'rating', rating: -1, correction: 'wrong' } },
    { method: 'POST', url: `/api/v1/runs/${id}/feedback/metrics`, payload: { metrics: { accuracy: 0 }, optimize: 'max', source: 'probe' } },
  ];
  const unknownRun = 'run_000000000000000000000000';
  const calls = forms(s.bravoRun).flatMap((id) => runCalls(id).map((call, i) => ({ call, unknown: runCalls(unknownRun)[i]! })));
  // The trace append names its run in the body: the same forms, with real spaces.
  const trace = (runId: string): Call => ({ method: 'POST', url: '/api/v1/trace', payload: { runId, type: 'tool.called', payload: { name: 'probe', args: {}, sideEffectLevel: 0 } } });
  for (const runId of [s.bravoRun, s.bravoRun.toUpperCase(), `${s.bravoRun} `, ` ${s.bravoRun}`, s.bravoRun.slice(0, -3)]) {
    calls.push({ call: trace(runId), unknown: trace(unknownRun) });
  }
  await assertInvisible([s.alphaOwner, s.alphaAdminKey, s.alphaMember, s.alphaPlainKey], calls);
  assert.equal(await s.bravoRows(), before);
});

test("another organization's users, members, keys and invitations are invisible to its admins by id in any form, and nothing of them changes", async (t) => {
  const s = await twoOrganizations(t);
  const before = await s.bravoRows();
  const byId = (user: string, key: string, invite: string): Call[] => [
    { method: 'DELETE', url: `/api/v1/users/${user}` },
    { method: 'POST', url: `/api/v1/users/${user}/reset-password` },
    { method: 'DELETE', url: `/api/v1/orgs/active/members/${user}` },
    { method: 'PATCH', url: `/api/v1/orgs/active/members/${user}`, payload: { role: 'owner' } },
    { method: 'PATCH', url: `/api/v1/keys/${key}`, payload: { mode: 'observe' } },
    { method: 'POST', url: `/api/v1/keys/${key}/revoke` },
    { method: 'POST', url: `/api/v1/orgs/active/invites/${invite}/revoke` },
  ];
  const unknown = byId('usr_000000000000000000000000', 'key_000000000000000000000000', 'inv_000000000000000000000000');
  const calls = [s.bravoMemberId, s.bravoOwnerId].flatMap((user) =>
    forms(user).flatMap((userForm, f) => byId(userForm, forms(s.bravoKeyId)[f]!, forms(s.bravoInvite)[f]!).map((call, i) => ({ call, unknown: unknown[i]! }))),
  );
  // The member routes are the owner's (a key has no owner rank): only the owner's session reaches their lookup.
  const ownerOnly = (call: Call) => call.url.includes('/members/');
  await assertInvisible([s.alphaOwner], calls);
  await assertInvisible([s.alphaAdminKey], calls.filter(({ call }) => !ownerOnly(call)));
  // A rename of someone else is a platform admin's alone: refused for its role before any lookup, the same for
  // another organization's user as for one that exists nowhere.
  for (const caller of [s.alphaOwner, s.alphaAdminKey]) {
    for (const id of [...forms(s.bravoMemberId), 'usr_000000000000000000000000']) {
      const response = await caller.send({ method: 'PATCH', url: `/api/v1/users/${id}`, payload: { name: 'Renamed' } });
      assert.equal(response.statusCode, 403, `${caller.label} ${id}: ${response.body}`);
      assert.equal(json(response).error.code, 'forbidden');
    }
  }
  assert.equal(await s.bravoRows(), before);
});

test("an organization's tenant-wide writes (cache, settings, name, onboarding, its deletion) leave another organization as it was", async (t) => {
  const s = await twoOrganizations(t);
  // Alpha has a cached answer of its own, so its invalidation deletes something.
  const chat = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'alpha asks' }] };
  assert.equal((await s.alphaAdminKey.send({ method: 'POST', url: '/v1/chat/completions', payload: chat })).statusCode, 200);
  await s.services.store.flush();
  const before = await s.bravoRows();
  const writes: Array<[Caller, Call, number]> = [
    [s.alphaAdminKey, { method: 'POST', url: '/api/v1/cache/invalidate', payload: { all: true } }, 200],
    [s.alphaAdminKey, { method: 'PUT', url: '/api/v1/settings', payload: { key: 'retention_days', value: 2 } }, 200],
    [s.alphaOwner, { method: 'PATCH', url: '/api/v1/orgs/active', payload: { name: 'Bravo' } }, 200],
    [s.alphaOwner, { method: 'POST', url: '/api/v1/orgs/active/onboarding/dismiss' }, 200],
    // A body naming the other organization is refused, never read as a choice of it.
    [s.alphaAdminKey, { method: 'POST', url: '/api/v1/cache/invalidate', payload: { all: true, tenantId: s.bravo } }, 400],
    [s.alphaAdminKey, { method: 'PUT', url: '/api/v1/settings', payload: { key: 'retention_days', value: 1, orgId: s.bravo } }, 400],
    [s.alphaOwner, { method: 'DELETE', url: '/api/v1/orgs/active', payload: { confirm: true, orgId: s.bravo } }, 400],
    [s.alphaOwner, { method: 'DELETE', url: '/api/v1/orgs/active', payload: { confirm: true } }, 200],
  ];
  for (const [caller, call, status] of writes) {
    const response = await caller.send(call);
    assert.equal(response.statusCode, status, `${caller.label}: ${call.method} ${call.url}: ${response.body}`);
    if (call.url.endsWith('/invalidate') && status === 200) assert.equal(json(response).invalidated, 1);
  }
  await s.services.store.flush();
  assert.equal(await s.bravoRows(), before);
  assert.equal(json(await s.app.inject({ url: '/api/v1/orgs/active', headers: operator(BOOT, s.bravo) })).org.name, 'Bravo');
});

/**
 * Who may call each write of the management API, read from the router so a new route must be placed here: `admin`
 * routes refuse a member session and a non-admin key with a 403 (SPEC 4.4-4.11 "admin", 5.2 owner/admin) and change
 * nothing; the others are open to a member by SPEC (their own account, runs' feedback and traces, public token routes).
 */
const WRITES: Record<string, 'admin' | 'member'> = {
  'POST /api/v1/auth/login': 'member',
  'POST /api/v1/auth/logout': 'member',
  'POST /api/v1/auth/change-password': 'member',
  'POST /api/v1/auth/signup': 'member',
  'POST /api/v1/auth/verification/resend': 'member',
  'POST /api/v1/auth/password-reset/request': 'member',
  'POST /api/v1/auth/password-reset/confirm': 'member',
  'POST /api/v1/users': 'admin',
  'PATCH /api/v1/users/:id': 'admin',
  'DELETE /api/v1/users/:id': 'admin',
  'POST /api/v1/users/:id/reset-password': 'admin',
  'POST /api/v1/orgs': 'member',
  'POST /api/v1/orgs/switch': 'member',
  'PATCH /api/v1/orgs/active': 'admin',
  'DELETE /api/v1/orgs/active': 'admin',
  'PATCH /api/v1/orgs/active/members/:userId': 'admin',
  'DELETE /api/v1/orgs/active/members/:userId': 'admin',
  'POST /api/v1/orgs/active/onboarding/dismiss': 'admin',
  'POST /api/v1/orgs/active/invites': 'admin',
  'POST /api/v1/orgs/active/invites/:id/revoke': 'admin',
  'POST /api/v1/invites/:token/accept': 'member',
  'POST /api/v1/keys': 'admin',
  'PATCH /api/v1/keys/:id': 'admin',
  'POST /api/v1/keys/:id/revoke': 'admin',
  'PUT /api/v1/settings': 'admin',
  'POST /api/v1/cache/invalidate': 'admin',
  'POST /api/v1/runs/:id/feedback': 'member',
  'POST /api/v1/runs/:id/feedback/metrics': 'member',
  'POST /api/v1/ingest/prompt': 'member',
  'POST /api/v1/trace': 'member',
};

test('every admin-only write refuses a member session and a non-admin key with a 403, and changes nothing of the organization', async (t) => {
  const s = await twoOrganizations(t);
  const routes = writeRoutes(s.app).map(([method, path]) => `${method} ${path}`);
  assert.deepEqual([...routes].sort(), Object.keys(WRITES).sort(), 'a write route the table does not place');
  // Bodies that would do something if let through, on records of the callers' own organization.
  const inputs: Record<string, Omit<Call, 'method'>> = {
    'POST /api/v1/users': { url: '/api/v1/users', payload: { email: 'made@alpha.test', orgRole: 'owner' } },
    'PATCH /api/v1/users/:id': { url: `/api/v1/users/${s.alphaOtherId}`, payload: { name: 'Renamed' } },
    'DELETE /api/v1/users/:id': { url: `/api/v1/users/${s.alphaOtherId}` },
    'POST /api/v1/users/:id/reset-password': { url: `/api/v1/users/${s.alphaOtherId}/reset-password` },
    'PATCH /api/v1/orgs/active': { url: '/api/v1/orgs/active', payload: { name: 'Taken' } },
    'DELETE /api/v1/orgs/active': { url: '/api/v1/orgs/active', payload: { confirm: true } },
    'PATCH /api/v1/orgs/active/members/:userId': { url: `/api/v1/orgs/active/members/${s.alphaOtherId}`, payload: { role: 'owner' } },
    'DELETE /api/v1/orgs/active/members/:userId': { url: `/api/v1/orgs/active/members/${s.alphaOtherId}` },
    'POST /api/v1/orgs/active/onboarding/dismiss': { url: '/api/v1/orgs/active/onboarding/dismiss' },
    'POST /api/v1/orgs/active/invites': { url: '/api/v1/orgs/active/invites', payload: { email: 'friend@elsewhere.test', role: 'admin' } },
    'POST /api/v1/orgs/active/invites/:id/revoke': { url: '/api/v1/orgs/active/invites/inv_000000000000000000000000/revoke' },
    'POST /api/v1/keys': { url: '/api/v1/keys', payload: { name: 'mine', admin: true } },
    'PATCH /api/v1/keys/:id': { url: `/api/v1/keys/${s.alphaKeyId}`, payload: { mode: 'observe' } },
    'POST /api/v1/keys/:id/revoke': { url: `/api/v1/keys/${s.alphaKeyId}/revoke` },
    'PUT /api/v1/settings': { url: '/api/v1/settings', payload: { key: 'retention_days', value: 1 } },
    'POST /api/v1/cache/invalidate': { url: '/api/v1/cache/invalidate', payload: { all: true } },
  };
  const alphaUsers = json(await s.app.inject({ url: '/api/v1/users', headers: operator(BOOT, s.alpha) })).users.map((user: { id: string }) => user.id);
  const before = await rowsOf(s.services.store, s.alpha, alphaUsers);
  for (const caller of [s.alphaMember, s.alphaPlainKey]) {
    for (const route of routes.filter((route) => WRITES[route] === 'admin')) {
      const input = inputs[route];
      assert.ok(input, `no input for ${route}`);
      const response = await caller.send({ method: route.split(' ')[0] as Call['method'], ...input });
      assert.equal(response.statusCode, 403, `${caller.label}: ${route}: ${response.body}`);
    }
  }
  await s.services.store.flush();
  // The member's session was seen (its row's last use) and nothing else of Alpha moved.
  const strip = (rows: string) => rows.replace(/"last_seen_at":\d+/g, '').replace(/"expires_at":\d+/g, '');
  assert.equal(strip(await rowsOf(s.services.store, s.alpha, alphaUsers)), strip(before));
});

test("an organization's admins (a session, a tenant-wide admin key) reach no further than their rank, and a demoted admin's session loses it at once", async (t) => {
  const s = await twoOrganizations(t);
  // What only an owner (or a platform admin) may do, asked of Alpha's own records, and the code of each refusal.
  // The owner also belongs to Default, so acting on their account is a platform admin's (docs/accounts.md, Users).
  const beyond = (self: string): Array<[Call, string]> => [
    [{ method: 'PATCH', url: `/api/v1/orgs/active/members/${s.alphaOwnerId}`, payload: { role: 'member' } }, 'owner_required'],
    [{ method: 'PATCH', url: `/api/v1/orgs/active/members/${self}`, payload: { role: 'owner' } }, 'owner_required'],
    [{ method: 'DELETE', url: `/api/v1/orgs/active/members/${s.alphaOwnerId}` }, 'owner_required'],
    [{ method: 'POST', url: '/api/v1/orgs/active/invites', payload: { email: 'heir@elsewhere.test', role: 'owner' } }, 'owner_required'],
    [{ method: 'POST', url: '/api/v1/users', payload: { email: 'heir@alpha.test', orgRole: 'owner' } }, 'owner_required'],
    [{ method: 'POST', url: '/api/v1/users', payload: { email: 'root@alpha.test', role: 'admin' } }, 'platform_admin_required'],
    [{ method: 'PATCH', url: `/api/v1/users/${s.alphaAdminId}`, payload: { role: 'admin' } }, 'platform_admin_required'],
    [{ method: 'DELETE', url: `/api/v1/users/${s.alphaOwnerId}` }, 'platform_admin_required'],
    [{ method: 'POST', url: `/api/v1/users/${s.alphaOwnerId}/reset-password` }, 'platform_admin_required'],
    // An admin acts on members only: not on an admin (the admin session on itself, the key on the admin).
    [{ method: 'POST', url: `/api/v1/users/${s.alphaAdminId}/reset-password` }, 'forbidden'],
    [{ method: 'DELETE', url: `/api/v1/users/${s.alphaAdminId}` }, self === s.alphaAdminId ? 'invalid_request' : 'forbidden'],
    [{ method: 'DELETE', url: '/api/v1/orgs/active', payload: { confirm: true } }, 'owner_required'],
  ];
  const alphaUsers = json(await s.app.inject({ url: '/api/v1/users', headers: operator(BOOT, s.alpha) })).users.map((user: { id: string }) => user.id);
  const before = await rowsOf(s.services.store, s.alpha, alphaUsers);
  for (const [caller, self] of [[s.alphaAdmin, s.alphaAdminId], [s.alphaAdminKey, s.alphaOtherId]] as const) {
    for (const [call, code] of beyond(self)) {
      const response = await caller.send(call);
      const label = `${caller.label}: ${call.method} ${call.url} ${JSON.stringify(call.payload ?? null)}: ${response.body}`;
      assert.equal(response.statusCode, code === 'invalid_request' ? 400 : 403, label);
      assert.equal(json(response).error.code, code, label);
    }
  }
  await s.services.store.flush();
  const strip = (rows: string) => rows.replace(/"last_seen_at":\d+/g, '').replace(/"expires_at":\d+/g, '');
  assert.equal(strip(await rowsOf(s.services.store, s.alpha, alphaUsers)), strip(before));

  // Demoted by the owner, the admin's very next request through the same session is a member's.
  const demoted = await s.alphaOwner.send({ method: 'PATCH', url: `/api/v1/orgs/active/members/${s.alphaAdminId}`, payload: { role: 'member' } });
  assert.equal(demoted.statusCode, 200, demoted.body);
  for (const call of [
    { method: 'POST', url: '/api/v1/keys', payload: { name: 'kept', admin: true } },
    { method: 'GET', url: '/api/v1/keys' },
    { method: 'GET', url: '/api/v1/users' },
    { method: 'PUT', url: '/api/v1/settings', payload: { key: 'retention_days', value: 1 } },
  ] as Call[]) {
    const response = await s.alphaAdmin.send(call);
    assert.equal(response.statusCode, 403, `${call.method} ${call.url}: ${response.body}`);
    assert.equal(json(response).error.code, 'admin_required');
  }
});
