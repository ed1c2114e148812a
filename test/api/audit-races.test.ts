/**
 * A change and its audit row commit together or not at all (AuditStep): writes racing each other, or racing their
 * organization's deletion, leave rows only for what happened. Each pair is sent at once, so both requests read
 * before either writes.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import type { FastifyInstance } from 'fastify';
import { bearer, json } from '../support/build.ts';
import { ADMIN, BOOT, buildWithAdmin, operator } from '../support/accounts.ts';

const auditOf = async (app: FastifyInstance, orgId: string) =>
  json(await app.inject({ url: '/api/v1/audit?limit=500', headers: operator(BOOT, orgId) })).events as Array<{ action: string; target: string; details: any }>;

test('two revocations of one key, or two identical mode changes, at once: both answered, one audited change each', async (t) => {
  const { app } = await buildWithAdmin(t);
  const admin = bearer(BOOT);
  for (let round = 0; round < 5; round++) {
    const key = json(await app.inject({ method: 'POST', url: '/api/v1/keys', headers: admin, payload: { name: `k${round}` } })).key;
    const modes = await Promise.all([1, 2].map(() => app.inject({ method: 'PATCH', url: `/api/v1/keys/${key.id}`, headers: admin, payload: { mode: 'observe' } })));
    assert.deepEqual(modes.map((r) => [r.statusCode, json(r).key.mode]), [[200, 'observe'], [200, 'observe']]);
    const revokes = await Promise.all([1, 2].map(() => app.inject({ method: 'POST', url: `/api/v1/keys/${key.id}/revoke`, headers: admin })));
    assert.deepEqual(revokes.map((r) => [r.statusCode, json(r).key.status]), [[200, 'revoked'], [200, 'revoked']]);
    const rows = (await auditOf(app, 'default')).filter((row) => row.target === key.id).map((row) => row.action);
    assert.deepEqual(rows.sort(), ['key.create', 'key.mode_change', 'key.revoke']);
  }
});

test('a mode change racing a revocation is either made and audited, or 409 with no row; never a row for a change not made', async (t) => {
  const { app } = await buildWithAdmin(t);
  const admin = bearer(BOOT);
  for (let round = 0; round < 8; round++) {
    const key = json(await app.inject({ method: 'POST', url: '/api/v1/keys', headers: admin, payload: { name: `k${round}` } })).key;
    const [patched] = await Promise.all([
      app.inject({ method: 'PATCH', url: `/api/v1/keys/${key.id}`, headers: admin, payload: { mode: 'observe' } }),
      app.inject({ method: 'POST', url: `/api/v1/keys/${key.id}/revoke`, headers: admin }),
    ]);
    const stored = json(await app.inject({ url: '/api/v1/keys?limit=200', headers: admin })).keys.find((k: any) => k.id === key.id);
    const changes = (await auditOf(app, 'default')).filter((row) => row.target === key.id && row.action === 'key.mode_change');
    if (patched.statusCode === 200) {
      assert.equal(json(patched).key.status, 'active', 'a 200 shows the key as its change left it');
      assert.equal(stored.mode, 'observe');
      assert.equal(changes.length, 1);
    } else {
      assert.equal(patched.statusCode, 409);
      assert.equal(stored.mode, 'optimize');
      assert.equal(changes.length, 0);
    }
  }
});

test('a key, a setting, a rename or an invitation revocation racing the deletion of its organization: 404 or done, and no row for what was not done', async (t) => {
  const { app, services } = await buildWithAdmin(t);
  const admin = bearer(BOOT);
  for (let round = 0; round < 6; round++) {
    const orgId = json(await app.inject({ method: 'POST', url: '/api/v1/orgs', headers: admin, payload: { name: `Doomed ${round}`, ownerEmail: ADMIN.email } })).org.id;
    const as = operator(BOOT, orgId);
    const invite = json(await app.inject({ method: 'POST', url: '/api/v1/orgs/active/invites', headers: as, payload: { email: `i${round}@example.test` } })).invite;
    const answers = await Promise.all([
      app.inject({ method: 'DELETE', url: '/api/v1/orgs/active', headers: as, payload: { confirm: true } }),
      app.inject({ method: 'POST', url: '/api/v1/keys', headers: as, payload: { name: 'late' } }),
      app.inject({ method: 'PUT', url: '/api/v1/settings', headers: as, payload: { key: 'redaction', value: true } }),
      app.inject({ method: 'PATCH', url: '/api/v1/orgs/active', headers: as, payload: { name: 'Renamed' } }),
      app.inject({ method: 'POST', url: `/api/v1/orgs/active/invites/${invite.id}/revoke`, headers: as }),
    ]);
    assert.equal(answers[0]!.statusCode, 200, answers[0]!.body);
    for (const answer of answers.slice(1)) assert.ok([200, 201, 404].includes(answer.statusCode), `${answer.statusCode} ${answer.body}`);
    const rows = await services.store.read((sql) => sql.all<{ action: string }>('SELECT action FROM audit_events WHERE tenant_id = ?', [orgId]));
    const done = (action: string, answer: { statusCode: number }) => rows.filter((row) => row.action === action).length === (answer.statusCode === 404 ? 0 : 1);
    assert.ok(done('key.create', answers[1]!), `key.create rows vs ${answers[1]!.statusCode}`);
    assert.ok(done('settings.update', answers[2]!), `settings.update rows vs ${answers[2]!.statusCode}`);
    assert.ok(done('org.rename', answers[3]!), `org.rename rows vs ${answers[3]!.statusCode}`);
    assert.ok(done('invite.revoke', answers[4]!), `invite.revoke rows vs ${answers[4]!.statusCode}`);
  }
});

test("two renames at once: each org.rename row names the name it replaced, so the rows chain; a rename to the current name records nothing", async (t) => {
  const { app } = await buildWithAdmin(t);
  const orgId = json(await app.inject({ method: 'POST', url: '/api/v1/orgs', headers: bearer(BOOT), payload: { name: 'First', ownerEmail: ADMIN.email } })).org.id;
  const as = operator(BOOT, orgId);
  const answers = await Promise.all(
    ['Second', 'Third'].map((name) => app.inject({ method: 'PATCH', url: '/api/v1/orgs/active', headers: as, payload: { name } })),
  );
  for (const answer of answers) assert.equal(answer.statusCode, 200, answer.body);
  const renames = (await auditOf(app, orgId)).filter((row) => row.action === 'org.rename').reverse();
  assert.equal(renames.length, 2);
  assert.equal(renames[0]!.details.from, 'First');
  assert.equal(renames[1]!.details.from, renames[0]!.details.to, 'the second rename replaced the name the first one set');

  const current = json(await app.inject({ url: '/api/v1/orgs/active', headers: as })).org.name;
  const same = await app.inject({ method: 'PATCH', url: '/api/v1/orgs/active', headers: as, payload: { name: current } });
  assert.equal(same.statusCode, 200, same.body);
  assert.equal(json(same).org.name, current);
  assert.equal((await auditOf(app, orgId)).filter((row) => row.action === 'org.rename').length, 2, 'a rename that changes nothing records nothing');
});

test('a setting put to the value it has changes nothing and records nothing: of two identical puts at once one is recorded; a secret alike', async (t) => {
  const { app } = await buildWithAdmin(t);
  const as = operator(BOOT);
  const put = (key: string, value: unknown) => app.inject({ method: 'PUT', url: '/api/v1/settings', headers: as, payload: { key, value } });
  const updates = async () => (await auditOf(app, 'default')).filter((row) => row.action === 'settings.update').map((row) => [row.target, row.details.value]);
  const answers = await Promise.all([put('retention_days', 7), put('retention_days', 7)]);
  for (const answer of answers) assert.equal(answer.statusCode, 200, answer.body);
  assert.deepEqual(await updates(), [['retention_days', 7]]);
  assert.equal((await put('model_substitutions', { 'gpt-4o': 'gpt-4o-mini' })).statusCode, 200);
  assert.equal((await put('model_substitutions', { 'gpt-4o': 'gpt-4o-mini' })).statusCode, 200);
  assert.equal((await put('webhook_secret', 'whsec-one-0123456789')).statusCode, 200);
  assert.equal((await put('webhook_secret', 'whsec-one-0123456789')).statusCode, 200);
  assert.equal((await put('webhook_secret', 'whsec-two-0123456789')).statusCode, 200);
  assert.deepEqual((await updates()).reverse(), [
    ['retention_days', 7],
    ['model_substitutions', { 'gpt-4o': 'gpt-4o-mini' }],
    ['webhook_secret', '[set]'],
    ['webhook_secret', '[set]'],
  ]);
});
