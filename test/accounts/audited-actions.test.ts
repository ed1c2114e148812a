/**
 * Every audited action of SPEC 6.2 that svc implements writes its row in the right organization, naming the right
 * actor and decision: signups, verifications, invitations (a failed delivery as deny), acceptances, password resets,
 * organization switches, creations, renames, API key mode changes, `org.member_remove` and `org.delete`.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import { json } from '../support/build.ts';
import { ADMIN, Browser, buildWithAdmin } from '../support/accounts.ts';

type Row = { tenant_id: string; action: string; decision: string; actor: Record<string, string>; target: string | null; details: Record<string, unknown> };

test('SPEC 6.2: each audited account action is recorded once, in its organization, by its actor, with its decision', async (t) => {
  const { app, admin: root, mail, services } = await buildWithAdmin(t, { SVC_ALLOW_PUBLIC_SIGNUP: 'true' });
  const rootId = json(await root.get('/api/v1/auth/me')).user.id;
  const rows = async (): Promise<Row[]> =>
    (await services.store.read((sql) => sql.all<Record<string, any>>('SELECT * FROM audit_events ORDER BY created_at, tenant_id, seq'))).map((row) => ({
      tenant_id: row.tenant_id,
      action: row.action,
      decision: row.decision,
      actor: JSON.parse(row.actor_json),
      target: row.target,
      details: JSON.parse(row.details_json),
    }));
  const before = (await rows()).length;
  const newRows = async () => (await rows()).slice(before);

  const ada = new Browser(app, '198.51.100.1');
  const signedUp = json(await ada.post('/api/v1/auth/signup', { email: 'ada@acme.io', name: 'Ada', password: 'ada-password-1' }));
  const adaId = signedUp.user.id;
  const acme = signedUp.org.id;
  assert.equal((await app.inject({ url: `/api/v1/auth/verify/${mail.token('ada@acme.io', '/verify-email')}` })).statusCode, 200);
  const second = json(await ada.post('/api/v1/orgs', { name: 'Second' })).org.id;
  assert.equal((await ada.post('/api/v1/orgs/switch', { orgId: acme })).statusCode, 200);
  assert.equal((await ada.patch('/api/v1/orgs/active', { name: 'Acme' })).statusCode, 200);

  assert.equal((await ada.post('/api/v1/orgs/active/invites', { email: 'bob@example.test' })).statusCode, 201);
  const bob = new Browser(app, '198.51.100.2');
  const accepted = await bob.post(`/api/v1/invites/${mail.token('bob@example.test', '/accept-invite')}/accept`, { name: 'Bob', password: 'bob-password-1' });
  assert.equal(accepted.statusCode, 200, accepted.body);
  const bobId = json(accepted).user.id;
  mail.failing = true;
  assert.equal((await ada.post('/api/v1/orgs/active/invites', { email: 'carol@example.test' })).statusCode, 503);
  mail.failing = false;
  assert.equal((await ada.post('/api/v1/orgs/active/invites', { email: ADMIN.email, role: 'admin' })).statusCode, 201);
  assert.equal((await root.post(`/api/v1/invites/${mail.token(ADMIN.email, '/accept-invite')}/accept`)).statusCode, 200);

  const key = json(await ada.post('/api/v1/keys', { name: 'ci' })).key.id;
  assert.equal((await ada.patch(`/api/v1/keys/${key}`, { mode: 'observe' })).statusCode, 200);

  await app.inject({ method: 'POST', url: '/api/v1/auth/password-reset/request', remoteAddress: '198.51.100.3', headers: { origin: 'http://localhost:80' }, payload: { email: 'bob@example.test' } });
  await new Promise((resolve) => setTimeout(resolve, 10));
  const reset = await new Browser(app, '198.51.100.3').post('/api/v1/auth/password-reset/confirm', { token: mail.token('bob@example.test', '/reset-password'), password: 'bob-password-2' });
  assert.equal(reset.statusCode, 200);

  assert.equal((await ada.delete(`/api/v1/orgs/active/members/${bobId}`)).statusCode, 200);
  assert.equal((await ada.post('/api/v1/orgs/switch', { orgId: second })).statusCode, 200);
  assert.equal((await ada.delete('/api/v1/orgs/active', { confirm: true })).statusCode, 200);

  const adaSession = { kind: 'session', userId: adaId };
  const expected: Array<[string, string, string, Record<string, string>]> = [
    ['user.signup', acme, 'allow', { kind: 'user', userId: adaId }],
    ['user.verify', acme, 'allow', { kind: 'user', userId: adaId }],
    ['org.create', second, 'allow', adaSession],
    ['org.switch', acme, 'allow', adaSession],
    ['org.rename', acme, 'allow', adaSession],
    ['invite.create', acme, 'allow', adaSession],
    ['user.signup', acme, 'allow', { kind: 'user', userId: bobId }],
    ['invite.accept', acme, 'allow', { kind: 'user', userId: bobId }],
    ['invite.create', acme, 'deny', adaSession],
    ['invite.create', acme, 'allow', adaSession],
    ['invite.accept', acme, 'allow', { kind: 'session', userId: rootId }],
    ['key.create', acme, 'allow', adaSession],
    ['key.mode_change', acme, 'allow', adaSession],
    ['user.password_reset', acme, 'allow', { kind: 'user', userId: bobId }],
    ['org.member_remove', acme, 'allow', adaSession],
    ['org.switch', second, 'allow', adaSession],
    ['org.delete', second, 'allow', adaSession],
  ];
  const recorded = await newRows();
  const key4 = (action: string, tenant: string, decision: string, actor: Record<string, string>) => JSON.stringify([action, tenant, decision, actor]);
  assert.deepEqual(
    recorded.map((row) => key4(row.action, row.tenant_id, row.decision, row.actor)).sort(),
    expected.map(([action, tenant, decision, actor]) => key4(action, tenant, decision, actor)).sort(),
  );
  const denied = recorded.find((row) => row.decision === 'deny')!;
  assert.deepEqual(denied.details, { email: 'carol@example.test', role: 'member', reason: 'delivery_failed' });
  assert.equal(recorded.find((row) => row.action === 'org.member_remove')!.target, bobId);
  // Each organization's log still verifies (the deleted one's is kept as evidence).
  for (const tenantId of [acme, second]) {
    const verdict = await services.audit.verify({ tenantId } as never);
    assert.equal(verdict.ok, true, tenantId);
  }
});
