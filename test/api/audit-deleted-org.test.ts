/**
 * A deleted organization's audit log (docs/accounts.md "Deletion", docs/api.md "Audit log"): kept after the
 * deletion with `org.delete` its last row, read and verified through `GET /api/v1/audit` by a platform admin only
 * (the local operator, the bootstrap token, a platform-admin user), naming it in `X-Svc-Tenant`. Nothing else of it
 * is reachable: every other route answers as for an organization that does not exist.
 */
import assert from 'node:assert/strict';
import test, { type TestContext } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { bearer, json } from '../support/build.ts';
import { BOOT, buildWithAdmin, makeUser, operator } from '../support/accounts.ts';
import { managementRoutes } from '../support/routes.ts';
import { LOCAL_OPERATOR_HEADER, LOCAL_OPERATOR_SECRET } from '../../src/http/local-socket.ts';

const AUDIT = '/api/v1/audit?verify=true&limit=500';
const localOperator = (orgId: string) => ({ [LOCAL_OPERATOR_HEADER]: LOCAL_OPERATOR_SECRET, 'x-svc-tenant': orgId });

async function keyIn(app: FastifyInstance, orgId: string, admin: boolean): Promise<string> {
  const created = await app.inject({ method: 'POST', url: '/api/v1/keys', headers: operator(BOOT, orgId), payload: { name: 'k', admin } });
  assert.equal(created.statusCode, 201, created.body);
  return json(created).token;
}

/**
 * Acme, created by the platform-admin user, with an admin (Ada, who also owns Beta) and an admin key, some history,
 * then deleted by its owner. Returns its id and its stored log's seqs, newest first.
 */
async function withDeletedOrg(t: TestContext) {
  const built = await buildWithAdmin(t);
  const { app, admin, services } = built;
  const acme: string = json(await admin.post('/api/v1/orgs', { name: 'Acme' })).org.id;
  const ada = await makeUser(app, { email: 'ada@acme.test', orgId: acme, orgRole: 'admin' });
  assert.equal((await ada.browser.post('/api/v1/orgs', { name: 'Beta' })).statusCode, 201);
  const acmeKey = await keyIn(app, acme, true);
  assert.equal((await admin.patch('/api/v1/orgs/active', { name: 'Acme Inc' })).statusCode, 200);
  assert.equal((await admin.post('/api/v1/orgs/active/invites', { email: 'later@acme.test' })).statusCode, 201);
  assert.deepEqual(json(await admin.delete('/api/v1/orgs/active', { confirm: true })), { deleted: true, id: acme });
  const seqs = (
    await services.store.read((sql) => sql.all<{ seq: number }>('SELECT seq FROM audit_events WHERE tenant_id = ? ORDER BY seq DESC', [acme]))
  ).map((row) => row.seq);
  assert.ok(seqs.length >= 5, 'the organization has a history');
  return { ...built, acme, ada: ada.browser, acmeKey, seqs };
}

test('the platform operators read and verify a deleted organization\'s audit log; one that never existed stays 404', async (t) => {
  const { app, admin, services, acme, seqs } = await withDeletedOrg(t);
  const readers = [
    ['the bootstrap token', () => app.inject({ url: AUDIT, headers: operator(BOOT, acme) })],
    ['the local operator', () => app.inject({ url: AUDIT, headers: localOperator(acme) })],
    ['a platform-admin user', () => admin.get(AUDIT, { 'x-svc-tenant': acme })],
  ] as const;
  for (const [who, read] of readers) {
    const answer = await read();
    assert.equal(answer.statusCode, 200, `${who}: ${answer.body}`);
    const { events, integrity } = json(answer);
    assert.deepEqual(events.map((event: { seq: number }) => event.seq), seqs, who);
    assert.deepEqual([events[0].action, events[0].target, events[0].details], ['org.delete', acme, { name: 'Acme Inc' }], who);
    assert.deepEqual(integrity, { ok: true, count: seqs.length, brokenAt: null }, who);
  }

  // Paged as any log.
  const first = json(await app.inject({ url: '/api/v1/audit?limit=1', headers: operator(BOOT, acme) }));
  assert.deepEqual(first.events.map((event: { action: string }) => event.action), ['org.delete']);
  const second = json(await app.inject({ url: `/api/v1/audit?limit=1&before=${first.window.nextBefore}`, headers: operator(BOOT, acme) }));
  assert.deepEqual(second.events.map((event: { seq: number }) => event.seq), [seqs[1]]);

  // verify=true recomputes the chain: a row altered in the data file is found.
  await services.store.write((sql) => sql.run(`UPDATE audit_events SET details_json = '{"name":"Someone Else"}' WHERE tenant_id = ? AND action = 'org.delete'`, [acme]));
  const tampered = json(await app.inject({ url: AUDIT, headers: operator(BOOT, acme) }));
  assert.deepEqual(tampered.integrity, { ok: false, count: seqs.length, brokenAt: seqs[0] });

  // An organization that never existed is not found, as before, by the operators; a session may not name it.
  for (const headers of [operator(BOOT, 'org_neverexisted'), localOperator('org_neverexisted')]) {
    const answer = await app.inject({ url: AUDIT, headers });
    assert.equal(answer.statusCode, 404, answer.body);
    assert.equal(json(answer).error.code, 'not_found');
  }
  assert.equal(json(await admin.get(AUDIT, { 'x-svc-tenant': 'org_neverexisted' })).error.code, 'forbidden');
});

test('no one but a platform admin reads a deleted organization\'s log, and no other route takes a deleted organization', async (t) => {
  const { app, admin, acme, ada, acmeKey } = await withDeletedOrg(t);
  const { browser: member } = await makeUser(app, { email: 'member@example.test' });
  const defaultAdminKey = await keyIn(app, 'default', true);
  const defaultKey = await keyIn(app, 'default', false);

  // Its former admin (owner of another organization now), a member, API keys: refused as before; its own key is gone.
  const callers = [
    ['its former admin, owner of Beta', () => ada.get(AUDIT, { 'x-svc-tenant': acme }), 403, 'forbidden'],
    ['a member of default', () => member.get(AUDIT, { 'x-svc-tenant': acme }), 403, 'forbidden'],
    ['an admin key of default', () => app.inject({ url: AUDIT, headers: { ...bearer(defaultAdminKey), 'x-svc-tenant': acme } }), 403, 'forbidden'],
    ['a key of default', () => app.inject({ url: AUDIT, headers: { ...bearer(defaultKey), 'x-svc-tenant': acme } }), 403, 'forbidden'],
    ['its own admin key', () => app.inject({ url: AUDIT, headers: { ...bearer(acmeKey), 'x-svc-tenant': acme } }), 401, 'unauthorized'],
    ['its own admin key, no header', () => app.inject({ url: AUDIT, headers: bearer(acmeKey) }), 401, 'unauthorized'],
  ] as const;
  for (const [who, read, status, code] of callers) {
    const answer = await read();
    assert.equal(answer.statusCode, status, `${who}: ${answer.body}`);
    assert.equal(json(answer).error.code, code, who);
  }
  // Without the header, its former admin reads Beta's log, which says nothing of Acme's.
  assert.ok(!(await ada.get(AUDIT)).body.includes(acme));

  // Every other route of the management API: the operator is told the organization is not found, a platform-admin
  // user that it may not name one, before the route runs.
  const others = managementRoutes(app).filter(([method, path]) => !(method === 'GET' && path === '/api/v1/audit'));
  assert.ok(others.length > 50, `${others.length} routes`);
  for (const [method, path] of others) {
    const url = path.replace(/:[^/]+/g, 'x').replace(/\*$/, 'x');
    const payload = method === 'GET' || method === 'DELETE' ? undefined : {};
    const byOperator = await app.inject({ method: method as 'GET', url, headers: operator(BOOT, acme), ...(payload ? { payload } : {}) });
    assert.equal(byOperator.statusCode, 404, `${method} ${path} as the operator: ${byOperator.body}`);
    assert.equal(json(byOperator).error.code, 'not_found', `${method} ${path}`);
    const bySession = await admin.request(method as 'GET', url, payload, { 'x-svc-tenant': acme });
    assert.equal(bySession.statusCode, 403, `${method} ${path} as a platform-admin user: ${bySession.body}`);
    assert.equal(json(bySession).error.code, 'forbidden', `${method} ${path}`);
  }
});
