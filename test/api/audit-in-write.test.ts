/**
 * An audited change and its row are one write (AuditStep): a row appended after the change commits is lost by a crash
 * between the two (the change made and acknowledged, no evidence), and lands after `org.delete` in the log kept of an
 * organization deleted in between. A trigger that refuses the row stands for the crash: the change must roll back
 * with it. A store that deletes the organization as soon as the change commits gives the race a fixed order.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import type { FastifyInstance } from 'fastify';
import type { Store } from '../../src/store/store.ts';
import { json } from '../support/build.ts';
import { overriding } from '../support/counting-store.ts';
import { ADMIN, BOOT, Browser, buildWithAdmin, makeUser, operator } from '../support/accounts.ts';

type Built = Awaited<ReturnType<typeof buildWithAdmin>>;

/** Every later insert of an audit row of `action` fails, as a crash right after the change would leave it unwritten. */
async function refuseRows(services: Built['services'], action: string, trigger = 'refuse_audit') {
  await services.store.write((sql) =>
    sql.run(`CREATE TRIGGER ${trigger} BEFORE INSERT ON audit_events WHEN NEW.action = '${action}' BEGIN SELECT RAISE(ABORT, 'audit refused'); END`),
  );
}

const count = (services: Built['services'], text: string, params: Array<string | number>) =>
  services.store.read((sql) => sql.get<{ n: number }>(`SELECT COUNT(*) AS n FROM (${text})`, params)!.n);

const newOrg = async (app: FastifyInstance, name: string) =>
  json(await app.inject({ method: 'POST', url: '/api/v1/orgs', headers: operator(BOOT), payload: { name, ownerEmail: ADMIN.email } })).org.id as string;

test('user.create: a row that cannot be written leaves no user created', async (t) => {
  const { app, services } = await buildWithAdmin(t);
  await refuseRows(services, 'user.create');
  const answer = await app.inject({ method: 'POST', url: '/api/v1/users', headers: operator(BOOT, 'default'), payload: { email: 'late@example.test' } });
  assert.equal(answer.statusCode, 500, answer.body);
  assert.equal(await count(services, 'SELECT 1 FROM users WHERE email = ?', ['late@example.test']), 0);
});

test('user.reset_password: a row that cannot be written leaves the password as it was', async (t) => {
  const { app, services } = await buildWithAdmin(t);
  const user = json(await app.inject({ method: 'POST', url: '/api/v1/users', headers: operator(BOOT, 'default'), payload: { email: 'u@example.test' } })).user;
  const hashOf = () => services.store.read((sql) => sql.get<{ h: string }>('SELECT password_hash AS h FROM users WHERE id = ?', [user.id])!.h);
  const before = await hashOf();
  await refuseRows(services, 'user.reset_password');
  const answer = await app.inject({ method: 'POST', url: `/api/v1/users/${user.id}/reset-password`, headers: operator(BOOT, 'default') });
  assert.equal(answer.statusCode, 500, answer.body);
  assert.equal(await hashOf(), before);
});

test('org.create: a row that cannot be written leaves no organization created', async (t) => {
  const { app, services } = await buildWithAdmin(t);
  await refuseRows(services, 'org.create');
  const orgs = await count(services, 'SELECT 1 FROM tenants', []);
  const answer = await app.inject({ method: 'POST', url: '/api/v1/orgs', headers: operator(BOOT), payload: { name: 'Late', ownerEmail: ADMIN.email } });
  assert.equal(answer.statusCode, 500, answer.body);
  assert.equal(await count(services, 'SELECT 1 FROM tenants', []), orgs);
});

test('org.switch: a row that cannot be written leaves the active organization as it was', async (t) => {
  const { services, admin } = await buildWithAdmin(t);
  const created = json(await admin.post('/api/v1/orgs', { name: 'Second' })).org.id;
  await refuseRows(services, 'org.switch');
  const answer = await admin.post('/api/v1/orgs/switch', { orgId: 'default' });
  assert.equal(answer.statusCode, 500, answer.body);
  assert.equal(json(await admin.get('/api/v1/orgs/active')).org.id, created);
});

test('cache.invalidate: a row that cannot be written leaves the entries in the cache', async (t) => {
  const { app, services } = await buildWithAdmin(t);
  await services.store.write((sql) => {
    for (const key of ['a', 'b']) {
      sql.run("INSERT INTO cache_entries (tenant_id, cache_type, key, value_json, created_at) VALUES ('default', 'exact_response', ?, '{}', 1)", [key]);
    }
  });
  await refuseRows(services, 'cache.invalidate');
  const answer = await app.inject({ method: 'POST', url: '/api/v1/cache/invalidate', headers: operator(BOOT, 'default'), payload: { cacheType: 'exact_response' } });
  assert.equal(answer.statusCode, 500, answer.body);
  assert.equal(await count(services, "SELECT 1 FROM cache_entries WHERE tenant_id = 'default'", []), 2);
});

/**
 * The organization is deleted (through the API, with its `org.delete` row) right after the first write that leaves
 * `changed` true: a row written after the change then follows `org.delete` in the kept log.
 */
async function deletingAfter(t: test.TestContext) {
  let app: FastifyInstance | null = null;
  let armed: { orgId: string; changed: () => Promise<boolean> } | null = null;
  const wrapStore = (inner: Store): Store =>
    overriding(inner, {
      write: (store) => async (fn) => {
        const result = await store.write(fn);
        const watch = armed;
        if (watch && (await watch.changed())) {
          armed = null;
          const deleted = await app!.inject({ method: 'DELETE', url: '/api/v1/orgs/active', headers: operator(BOOT, watch.orgId), payload: { confirm: true } });
          assert.equal(deleted.statusCode, 200, deleted.body);
        }
        return result;
      },
    });
  const built = await buildWithAdmin(t, {}, {}, wrapStore);
  app = built.app;
  const actionsOf = (orgId: string) =>
    built.services.store.read((sql) => sql.all<{ action: string }>('SELECT action FROM audit_events WHERE tenant_id = ? ORDER BY seq', [orgId]).map((r) => r.action));
  const arm = (orgId: string, changed: () => Promise<boolean>) => (armed = { orgId, changed });
  return { ...built, arm, actionsOf };
}

test('user.create and user.reset_password racing the deletion of the organization: their rows precede org.delete', async (t) => {
  const { app, services, arm, actionsOf } = await deletingAfter(t);
  const orgId = await newOrg(app, 'Doomed');
  const user = json(await app.inject({ method: 'POST', url: '/api/v1/users', headers: operator(BOOT, orgId), payload: { email: 'r@example.test' } })).user;
  const hash = await services.store.read((sql) => sql.get<{ h: string }>('SELECT password_hash AS h FROM users WHERE id = ?', [user.id])!.h);
  arm(orgId, async () => (await count(services, 'SELECT 1 FROM users WHERE id = ? AND password_hash != ?', [user.id, hash])) === 1);
  const reset = await app.inject({ method: 'POST', url: `/api/v1/users/${user.id}/reset-password`, headers: operator(BOOT, orgId) });
  assert.equal(reset.statusCode, 200, reset.body);
  assert.deepEqual((await actionsOf(orgId)).slice(-2), ['user.reset_password', 'org.delete']);

  const second = await newOrg(app, 'Doomed too');
  arm(second, async () => (await count(services, 'SELECT 1 FROM users WHERE email = ?', ['late@example.test'])) === 1);
  const created = await app.inject({ method: 'POST', url: '/api/v1/users', headers: operator(BOOT, second), payload: { email: 'late@example.test' } });
  assert.equal(created.statusCode, 201, created.body);
  assert.deepEqual((await actionsOf(second)).slice(-2), ['user.create', 'org.delete']);
});

test('org.create racing the deletion of the organization it created: org.create precedes org.delete', async (t) => {
  const { app, services, arm, actionsOf } = await deletingAfter(t);
  const known = new Set(await services.store.read((sql) => sql.all<{ id: string }>('SELECT id FROM tenants').map((r) => r.id)));
  // The organization to delete is known only once created: the watch names it as it fires.
  const watch = arm('', async () => {
    const fresh = await services.store.read((sql) => sql.all<{ id: string }>('SELECT id FROM tenants').map((r) => r.id).filter((id) => !known.has(id)));
    if (fresh.length === 0) return false;
    watch.orgId = fresh[0]!;
    return true;
  });
  const answer = await app.inject({ method: 'POST', url: '/api/v1/orgs', headers: operator(BOOT), payload: { name: 'Short-lived', ownerEmail: ADMIN.email } });
  assert.equal(answer.statusCode, 201, answer.body);
  assert.deepEqual(await actionsOf(watch.orgId), ['org.create', 'org.delete']);
});

test('org.switch to the organization already active changes nothing and records nothing', async (t) => {
  const { services, admin } = await buildWithAdmin(t);
  const created = json(await admin.post('/api/v1/orgs', { name: 'Second' })).org.id;
  const switched = await admin.post('/api/v1/orgs/switch', { orgId: created });
  assert.equal(switched.statusCode, 200, switched.body);
  assert.equal(await count(services, "SELECT 1 FROM audit_events WHERE action = 'org.switch'", []), 0);
});

test('cache.invalidate racing the deletion of the organization: its row precedes org.delete', async (t) => {
  const { app, services, arm, actionsOf } = await deletingAfter(t);
  const orgId = await newOrg(app, 'Doomed');
  await services.store.write((sql) =>
    sql.run("INSERT INTO cache_entries (tenant_id, cache_type, key, value_json, created_at) VALUES (?, 'exact_response', 'a', '{}', 1)", [orgId]),
  );
  arm(orgId, async () => (await count(services, 'SELECT 1 FROM cache_entries WHERE tenant_id = ?', [orgId])) === 0);
  const answer = await app.inject({ method: 'POST', url: '/api/v1/cache/invalidate', headers: operator(BOOT, orgId), payload: { all: true } });
  assert.equal(answer.statusCode, 200, answer.body);
  assert.deepEqual((await actionsOf(orgId)).slice(-2), ['cache.invalidate', 'org.delete']);
});

test('user.signup: a row that cannot be written leaves no account and no organization', async (t) => {
  const { app, services } = await buildWithAdmin(t, { SVC_ALLOW_PUBLIC_SIGNUP: 'true' });
  await refuseRows(services, 'user.signup');
  const orgs = await count(services, 'SELECT 1 FROM tenants', []);
  const answer = await new Browser(app, '198.51.100.1').post('/api/v1/auth/signup', { email: 'ada@acme.io', name: 'Ada', password: 'ada-password-1' });
  assert.equal(answer.statusCode, 500, answer.body);
  assert.equal(await count(services, 'SELECT 1 FROM users WHERE email = ?', ['ada@acme.io']), 0);
  assert.equal(await count(services, 'SELECT 1 FROM tenants', []), orgs);
});

test('invite.accept: a row that cannot be written leaves the invitation pending and no membership, for a new or an existing account', async (t) => {
  const { app, services, mail } = await buildWithAdmin(t);
  const orgId = await newOrg(app, 'Inviting');
  for (const email of ['bob@example.test', 'carol@example.test']) {
    const sent = await app.inject({ method: 'POST', url: '/api/v1/orgs/active/invites', headers: operator(BOOT, orgId), payload: { email } });
    assert.equal(sent.statusCode, 201, sent.body);
  }
  const carol = (await makeUser(app, { email: 'carol@example.test' })).browser;
  await refuseRows(services, 'invite.accept');
  const bob = await new Browser(app, '198.51.100.2').post(`/api/v1/invites/${mail.token('bob@example.test', '/accept-invite')}/accept`, { name: 'Bob', password: 'bob-password-1' });
  assert.equal(bob.statusCode, 500, bob.body);
  assert.equal(await count(services, 'SELECT 1 FROM users WHERE email = ?', ['bob@example.test']), 0);
  const carolAccepts = await carol.post(`/api/v1/invites/${mail.token('carol@example.test', '/accept-invite')}/accept`);
  assert.equal(carolAccepts.statusCode, 500, carolAccepts.body);
  assert.equal(await count(services, 'SELECT 1 FROM org_members WHERE tenant_id = ?', [orgId]), 1);
  assert.equal(await count(services, "SELECT 1 FROM org_invites WHERE tenant_id = ? AND status = 'pending'", [orgId]), 2);
});

test('user.password_change, user.verify and user.password_reset: a row that cannot be written leaves the account as it was', async (t) => {
  const { app, services, mail } = await buildWithAdmin(t, { SVC_ALLOW_PUBLIC_SIGNUP: 'true' });
  const ada = new Browser(app, '198.51.100.1');
  const signedUp = await ada.post('/api/v1/auth/signup', { email: 'ada@acme.io', name: 'Ada', password: 'ada-password-1' });
  assert.equal(signedUp.statusCode, 201, signedUp.body);
  const id = json(signedUp).user.id;
  const account = () =>
    services.store.read((sql) => sql.get<{ h: string; v: number }>('SELECT password_hash AS h, email_verified AS v FROM users WHERE id = ?', [id])!);
  const before = await account();
  await refuseRows(services, 'user.verify');
  const verified = await app.inject({ url: `/api/v1/auth/verify/${mail.token('ada@acme.io', '/verify-email')}` });
  assert.equal(verified.statusCode, 500, verified.body);
  await refuseRows(services, 'user.password_change', 'refuse_change');
  const changed = await ada.post('/api/v1/auth/change-password', { current: 'ada-password-1', new: 'ada-password-2' });
  assert.equal(changed.statusCode, 500, changed.body);
  await refuseRows(services, 'user.password_reset', 'refuse_reset');
  await app.inject({ method: 'POST', url: '/api/v1/auth/password-reset/request', remoteAddress: '198.51.100.3', headers: { origin: 'http://localhost:80' }, payload: { email: 'ada@acme.io' } });
  await new Promise((resolve) => setTimeout(resolve, 10));
  const reset = await new Browser(app, '198.51.100.3').post('/api/v1/auth/password-reset/confirm', { token: mail.token('ada@acme.io', '/reset-password'), password: 'ada-password-3' });
  assert.equal(reset.statusCode, 500, reset.body);
  assert.deepEqual(await account(), before);
});

test('org.delete: a row that cannot be written leaves the organization in place', async (t) => {
  const { app, services } = await buildWithAdmin(t);
  const orgId = await newOrg(app, 'Kept');
  await refuseRows(services, 'org.delete');
  const answer = await app.inject({ method: 'DELETE', url: '/api/v1/orgs/active', headers: operator(BOOT, orgId), payload: { confirm: true } });
  assert.equal(answer.statusCode, 500, answer.body);
  assert.equal(await count(services, 'SELECT 1 FROM tenants WHERE id = ?', [orgId]), 1);
});
