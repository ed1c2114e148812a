/**
 * What `GET /api/v1/audit` shows to whom (SPEC 4.12 "any", 4.6 "API keys: admin required"; docs/api.md "Audit
 * log"): every identity of the tenant reads the log, but a row of an admin-only area (keys, users, invitations) is
 * shown only to those who may read that area elsewhere, or to the user it is about.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import { bearer, json } from '../support/build.ts';
import { ADMIN, BOOT, Browser, buildAccounts, buildWithAdmin, makeUser, operator } from '../support/accounts.ts';
import { recording } from '../support/counting-store.ts';

type Row = { action: string; target: string | null; actor: Record<string, string>; details: Record<string, unknown> };

test('a member reads the audit log without the rows of keys, users and invitations of others', async (t) => {
  const { app, admin } = await buildWithAdmin(t);
  const { browser: member, id: memberId } = await makeUser(app, { email: 'member@example.test' });
  await makeUser(app, { email: 'other@example.test' });
  const created = json(await admin.post('/api/v1/keys', { name: 'ci', admin: true }));
  assert.ok(created.token);
  assert.equal((await admin.patch(`/api/v1/keys/${created.key.id}`, { mode: 'observe' })).statusCode, 200);
  assert.equal((await admin.post('/api/v1/orgs/active/invites', { email: 'new@example.test' })).statusCode, 201);
  assert.equal((await admin.patch('/api/v1/orgs/active', { name: 'Renamed' })).statusCode, 200);

  const everything: Row[] = json(await admin.get('/api/v1/audit?limit=500')).events;
  const actions = new Set(everything.map((row) => row.action));
  for (const action of ['key.create', 'key.mode_change', 'invite.create', 'user.create', 'org.rename']) assert.ok(actions.has(action), action);

  // GET /keys, /users and /orgs/active/invites are admin-only: a member reads none of their rows in the log either.
  assert.equal((await member.get('/api/v1/keys')).statusCode, 403);
  const seen: Row[] = json(await member.get('/api/v1/audit?limit=500')).events;
  assert.deepEqual(seen.filter((row) => /^(key|invite)\./.test(row.action)), []);
  assert.ok(!JSON.stringify(seen).includes(created.key.id), 'no row names the key');
  assert.ok(!JSON.stringify(seen).includes('other@example.test'), 'no row names another user');
  // The rows about the member themself, and those of areas a member reads, stay.
  assert.ok(seen.some((row) => row.action === 'user.create' && row.target === memberId), 'their own account');
  assert.ok(seen.some((row) => row.action === 'org.rename'), 'the organization (GET /orgs/active is for members)');

  // Withheld rows do not take places of the page: the newest row the member may see is the first of limit=1.
  assert.deepEqual(json(await member.get('/api/v1/audit?limit=1')).events.map((row: Row) => row.action), ['org.rename']);
});

test('API keys: a non-admin key sees no key rows; an app-pinned admin key those of its own app, as GET /keys lists', async (t) => {
  const { app } = await buildWithAdmin(t);
  const make = async (payload: Record<string, unknown>) =>
    json(await app.inject({ method: 'POST', url: '/api/v1/keys', headers: operator(BOOT), payload: { name: 'k', ...payload } }));
  const plain = await make({});
  const pinnedAdmin = await make({ admin: true, appId: 'app-a' });
  const ofA = await make({ appId: 'app-a' });
  const ofB = await make({ appId: 'app-b' });
  for (const key of [ofA, ofB]) {
    const changed = await app.inject({ method: 'PATCH', url: `/api/v1/keys/${key.key.id}`, headers: operator(BOOT), payload: { mode: 'observe' } });
    assert.equal(changed.statusCode, 200);
  }
  const revoked = await app.inject({ method: 'POST', url: `/api/v1/keys/${ofB.key.id}/revoke`, headers: operator(BOOT) });
  assert.equal(revoked.statusCode, 200);

  const rowsFor = async (token: string): Promise<Row[]> => json(await app.inject({ url: '/api/v1/audit?limit=500', headers: bearer(token) })).events;
  const keyRows = (rows: Row[]) => rows.filter((row) => row.action.startsWith('key.')).map((row) => `${row.action} ${row.target}`).sort();

  assert.deepEqual(keyRows(await rowsFor(plain.token)), []);
  const listedToPinned = json(await app.inject({ url: '/api/v1/keys', headers: bearer(pinnedAdmin.token) })).keys.map((k: { id: string }) => k.id);
  assert.deepEqual(listedToPinned.sort(), [pinnedAdmin.key.id, ofA.key.id].sort());
  assert.deepEqual(keyRows(await rowsFor(pinnedAdmin.token)), [`key.create ${ofA.key.id}`, `key.create ${pinnedAdmin.key.id}`, `key.mode_change ${ofA.key.id}`].sort());
  // A tenant-wide admin reads every row.
  assert.equal(keyRows(json(await app.inject({ url: '/api/v1/audit?limit=500', headers: bearer(BOOT) })).events).length, 7);
});

test("an org switch is recorded in the organization switched to without naming the one left (another tenant's id)", async (t) => {
  const { app, services } = await buildWithAdmin(t);
  const { browser: ada } = await makeUser(app, { email: 'switcher@example.test' });
  const { browser: bob } = await makeUser(app, { email: 'bystander@example.test' });
  const secret = json(await ada.post('/api/v1/orgs', { name: 'Private' })).org.id;
  assert.equal((await ada.post('/api/v1/orgs/switch', { orgId: 'default' })).statusCode, 200);

  // Bob, a member of the default organization only, reads its log: the switch is there, the private org's id is not.
  const seen: Row[] = json(await bob.get('/api/v1/audit?limit=500')).events;
  const switches = seen.filter((row) => row.action === 'org.switch');
  assert.equal(switches.length, 1);
  assert.equal(switches[0]!.target, 'default');
  assert.deepEqual(switches[0]!.details, {});
  assert.ok(!JSON.stringify(seen).includes(secret), 'no row names the organization the user came from');

  // A row written before (details.from recorded) is read without it.
  await services.audit.recordAs({ kind: 'session', userId: 'usr_old' }, 'default', 'org.switch', { target: 'default', details: { from: secret } });
  const again = JSON.stringify(json(await bob.get('/api/v1/audit?limit=500')).events);
  assert.ok(!again.includes(secret), again);
});

test('verify=true tells a member whether the chain is intact, not how many events it holds (withheld ones included)', async (t) => {
  const { app, admin } = await buildWithAdmin(t);
  const { browser: member } = await makeUser(app, { email: 'counter@example.test' });
  const integrityOf = async (reader: Browser) => json(await reader.get('/api/v1/audit?limit=1&verify=true')).integrity;
  const before = await integrityOf(member);
  assert.deepEqual(before, { ok: true, count: null, brokenAt: null });

  // A key created meanwhile is withheld from the member: neither the page nor the verification tells them of it.
  assert.equal((await admin.post('/api/v1/keys', { name: 'hidden' })).statusCode, 201);
  assert.deepEqual(await integrityOf(member), before);
  // A tenant-wide admin, who reads every event, gets the count.
  const full = await integrityOf(admin);
  assert.equal(full.ok, true);
  assert.equal(full.count, json(await admin.get('/api/v1/audit?limit=1')).events[0].seq);
});

test("a reader's page is found through indexes, not by filtering the tenant's whole log (a page's cost does not grow with it)", async (t) => {
  const watch = recording();
  const { app, services } = await buildAccounts(t, {
    env: { SVC_API_KEY: BOOT, SVC_ADMIN_EMAIL: ADMIN.email, SVC_ADMIN_PASSWORD: ADMIN.password },
    wrapStore: watch.wrap,
  });
  const { browser: member } = await makeUser(app, { email: 'reader@example.test' });
  const make = async (payload: Record<string, unknown>) =>
    json(await app.inject({ method: 'POST', url: '/api/v1/keys', headers: operator(BOOT), payload: { name: 'k', ...payload } })).token as string;
  const plainKey = await make({});
  const pinnedAdminKey = await make({ admin: true, appId: 'app-a' });
  await make({ appId: 'app-a' });
  assert.equal((await app.inject({ method: 'PUT', url: '/api/v1/settings', headers: operator(BOOT), payload: { key: 'retention_days', value: 9 } })).statusCode, 200);

  const readers: Array<[string, (url: string) => Promise<{ statusCode: number; body: string }>]> = [
    ['member session', (url) => member.get(url)],
    ['non-admin key', (url) => app.inject({ url, headers: bearer(plainKey) })],
    ['app-pinned admin key', (url) => app.inject({ url, headers: bearer(pinnedAdminKey) })],
  ];
  for (const [label, get] of readers) {
    for (const url of ['/api/v1/audit?limit=2', '/api/v1/audit?limit=2&before=100', '/api/v1/audit?decision=allow']) {
      watch.start();
      const response = await get(url);
      const reads = watch.stop().filter((read) => /\bFROM audit_events\b/.test(read.text));
      assert.equal(response.statusCode, 200, `${label} ${url}`);
      assert.ok(json(response).events.length > 0, `${label} ${url}`);
      assert.ok(reads.length > 0);
      for (const read of reads) {
        const plan = await services.store.read((sql) => sql.all<{ detail: string }>(`EXPLAIN QUERY PLAN ${read.text}`, read.params));
        // Each walk of the log is bounded by what the reader may see (or the decision asked for), not by the tenant alone.
        for (const { detail } of plan.filter((row) => /^(SCAN|SEARCH) audit_events\b/.test(row.detail))) {
          assert.match(detail, /admin_only=\?|target=\?|<expr>=\?|decision=\?|rowid=\?/, `${label} ${url}: ${detail}`);
        }
      }
    }
    // A page filtered by decision walks the rows the reader may see of that decision only (migration 14), not every
    // row the reader may see checking its decision: a rare decision's page would cost the reader's whole share.
    for (const url of ['/api/v1/audit?decision=deny', '/api/v1/audit?decision=allow&before=100']) {
      watch.start();
      const response = await get(url);
      const reads = watch.stop().filter((read) => /\bFROM audit_events\b/.test(read.text));
      assert.equal(response.statusCode, 200, `${label} ${url}`);
      assert.ok(reads.length > 0);
      for (const read of reads) {
        const plan = await services.store.read((sql) => sql.all<{ detail: string }>(`EXPLAIN QUERY PLAN ${read.text}`, read.params));
        for (const { detail } of plan.filter((row) => /^(SCAN|SEARCH) audit_events\b/.test(row.detail) && !/rowid=\?/.test(row.detail))) {
          assert.match(detail, /decision=\?/, `${label} ${url}: ${detail}`);
        }
      }
    }
  }
});
