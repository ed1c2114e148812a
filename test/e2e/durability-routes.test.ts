/**
 * Every mutating `/api/v1` route, once each, against a real `svc serve`; SIGKILL right after the last 2xx; each write
 * read back after a restart on the same data directory, with the audit row it commits in the same transaction. A
 * management write is committed before its 2xx (DESIGN.md section 3), so none may be missing.
 */
import assert from 'node:assert/strict';
import test, { before } from 'node:test';
import { contentChunk, startFakeUpstream, startSse } from '../support/fake-upstream.ts';
import { openStore } from '../../src/store/store.ts';
import { ensureBundle, startServe, tempDir, type ServeProcess } from '../support/process.ts';

before(ensureBundle);

const BOOT = 'bootstrap-token-durability-routes-01';
const ADMIN = { email: 'root@example.test', password: 'correct horse battery' };
const ORIGIN = 'http://app.example.test';
const ENV = {
  SVC_API_KEY: BOOT,
  SVC_ADMIN_EMAIL: ADMIN.email,
  SVC_ADMIN_PASSWORD: ADMIN.password,
  SVC_ALLOW_PUBLIC_SIGNUP: 'true',
  SVC_APP_BASE_URL: ORIGIN,
};

interface Answer {
  status: number;
  body: any;
  cookie: string | null;
}

/** A client of one server: the bootstrap token (`op`), or a session cookie with the app's Origin. */
function clientOf(server: ServeProcess) {
  async function call(method: string, path: string, body: unknown, headers: Record<string, string>): Promise<Answer> {
    const response = await fetch(`${server.address}${path}`, {
      method,
      headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    const cookie = /svc_session=([^;]*)/.exec(response.headers.get('set-cookie') ?? '')?.[1] ?? null;
    return { status: response.status, body: text ? JSON.parse(text) : null, cookie };
  }
  const op = (method: string, path: string, body?: unknown, tenant?: string) =>
    call(method, path, body, { authorization: `Bearer ${BOOT}`, ...(tenant ? { 'x-svc-tenant': tenant } : {}) });
  const as = (cookie: string | null, method: string, path: string, body?: unknown) =>
    call(method, path, body, { origin: ORIGIN, ...(cookie ? { cookie: `svc_session=${cookie}` } : {}) });
  return { op, as };
}

/** `answer` had a 2xx; its body returned. */
function ok(answer: Answer, label: string): any {
  assert.ok(answer.status >= 200 && answer.status < 300, `${label}: ${answer.status} ${JSON.stringify(answer.body)}`);
  return answer.body;
}

/** The token of the last e-mail to `to` whose link has `path` (the console transport writes e-mails to stderr). */
function mailedToken(server: ServeProcess, to: string, path: string): string {
  const mails = server.output().split('svc: e-mail to ').filter((mail) => mail.startsWith(`${to}:`) && mail.includes(`${path}?token=`));
  const token = new RegExp(`${path}\\?token=([A-Za-z0-9_.~-]+)`).exec(mails.at(-1) ?? '')?.[1];
  assert.ok(token, `an e-mail to ${to} with a ${path} link`);
  return token;
}

test('a write of every mutating /api/v1 route answered 2xx survives a kill -9 right after the last answer', async (t) => {
  const dataDir = tempDir(t);
  const server = await startServe(t, dataDir, ENV);
  const { op, as } = clientOf(server);

  // Keys.
  const key = ok(await op('POST', '/api/v1/keys', { name: 'durable-key' }), 'POST /keys').key;
  ok(await op('PATCH', `/api/v1/keys/${key.id}`, { mode: 'observe' }), 'PATCH /keys/:id');
  const revoked = ok(await op('POST', '/api/v1/keys', { name: 'revoked-key' }), 'POST /keys').key;
  ok(await op('POST', `/api/v1/keys/${revoked.id}/revoke`), 'POST /keys/:id/revoke');
  // Settings.
  ok(await op('PUT', '/api/v1/settings', { key: 'retention_days', value: 12 }), 'PUT /settings');
  // Users (as the operator).
  const temp = 'temporary-pass-1';
  const renamed = ok(await op('POST', '/api/v1/users', { email: 'renamed@example.test', tempPassword: temp }), 'POST /users').user;
  ok(await op('PATCH', `/api/v1/users/${renamed.id}`, { name: 'Renamed User' }), 'PATCH /users/:id');
  const resetByAdmin = ok(await op('POST', `/api/v1/users/${renamed.id}/reset-password`), 'POST /users/:id/reset-password').tempPassword;
  const deleted = ok(await op('POST', '/api/v1/users', { email: 'deleted@example.test', tempPassword: temp }), 'POST /users').user;
  ok(await op('DELETE', `/api/v1/users/${deleted.id}`), 'DELETE /users/:id');
  ok(await op('POST', '/api/v1/users', { email: 'forgetful@example.test', tempPassword: temp }), 'POST /users');
  // Sessions.
  const adminLogin = await as(null, 'POST', '/api/v1/auth/login', ADMIN);
  ok(adminLogin, 'POST /auth/login');
  const newAdminPassword = 'a-new-admin-password';
  const changed = await as(adminLogin.cookie, 'POST', '/api/v1/auth/change-password', { current: ADMIN.password, new: newAdminPassword });
  ok(changed, 'POST /auth/change-password');
  const admin = changed.cookie!;
  const loggedOut = (await as(null, 'POST', '/api/v1/auth/login', { email: ADMIN.email, password: newAdminPassword })).cookie!;
  ok(await as(loggedOut, 'POST', '/api/v1/auth/logout'), 'POST /auth/logout');
  // Signup, verification, password recovery.
  const signedUp = await as(null, 'POST', '/api/v1/auth/signup', { email: 'signer@example.test', name: 'Signer', password: 'signup-password-1' });
  ok(signedUp, 'POST /auth/signup');
  ok(await as(signedUp.cookie, 'POST', '/api/v1/auth/verification/resend', {}), 'POST /auth/verification/resend');
  ok(await as(null, 'GET', `/api/v1/auth/verify/${mailedToken(server, 'signer@example.test', '/verify-email')}`), 'GET /auth/verify/:token');
  ok(await as(null, 'POST', '/api/v1/auth/password-reset/request', { email: 'forgetful@example.test' }), 'POST /auth/password-reset/request');
  const resetToken = mailedToken(server, 'forgetful@example.test', '/reset-password');
  ok(await as(null, 'POST', '/api/v1/auth/password-reset/confirm', { token: resetToken, password: 'recovered-password-1' }), 'POST /auth/password-reset/confirm');
  const forgetfulLogin = await as(null, 'POST', '/api/v1/auth/login', { email: 'forgetful@example.test', password: 'recovered-password-1' });
  const forgetful = ok(forgetfulLogin, 'POST /auth/login').user;
  // Organizations and invitations (as the admin's session).
  const second = ok(await as(admin, 'POST', '/api/v1/orgs', { name: 'Second' }), 'POST /orgs').org;
  ok(await as(admin, 'POST', '/api/v1/orgs/switch', { orgId: second.id }), 'POST /orgs/switch');
  ok(await as(admin, 'PATCH', '/api/v1/orgs/active', { name: 'Second renamed' }), 'PATCH /orgs/active');
  ok(await as(admin, 'POST', '/api/v1/orgs/active/onboarding/dismiss', {}), 'POST /orgs/active/onboarding/dismiss');
  const invite = ok(await as(admin, 'POST', '/api/v1/orgs/active/invites', { email: 'invitee@example.test', role: 'member' }), 'POST /orgs/active/invites').invite;
  const accepted = await as(null, 'POST', `/api/v1/invites/${mailedToken(server, 'invitee@example.test', '/accept-invite')}/accept`, { name: 'Invitee', password: 'invitee-password-1' });
  const invitee = ok(accepted, 'POST /invites/:token/accept').user;
  // An existing account accepts signed in: its session moves to the organization.
  const signerInvite = ok(await as(admin, 'POST', '/api/v1/orgs/active/invites', { email: 'signer@example.test', role: 'member' }), 'POST /orgs/active/invites').invite;
  const signerAccepted = await as(signedUp.cookie, 'POST', `/api/v1/invites/${mailedToken(server, 'signer@example.test', '/accept-invite')}/accept`, {});
  const signerAccount = ok(signerAccepted, 'POST /invites/:token/accept (signed in)').user;
  ok(await as(admin, 'PATCH', `/api/v1/orgs/active/members/${invitee.id}`, { role: 'admin' }), 'PATCH /orgs/active/members/:userId');
  const revokedInvite = ok(await as(admin, 'POST', '/api/v1/orgs/active/invites', { email: 'revoked@example.test' }), 'POST /orgs/active/invites').invite;
  ok(await as(admin, 'POST', `/api/v1/orgs/active/invites/${revokedInvite.id}/revoke`), 'POST /orgs/active/invites/:id/revoke');
  const removed = ok(await op('POST', '/api/v1/users', { email: 'removed@example.test', tempPassword: temp, orgRole: 'member' }, second.id), 'POST /users').user;
  ok(await as(admin, 'DELETE', `/api/v1/orgs/active/members/${removed.id}`), 'DELETE /orgs/active/members/:userId');
  const doomed = ok(await as(admin, 'POST', '/api/v1/orgs', { name: 'Doomed' }), 'POST /orgs').org;
  ok(await as(admin, 'POST', '/api/v1/orgs/switch', { orgId: doomed.id }), 'POST /orgs/switch');
  ok(await as(admin, 'DELETE', '/api/v1/orgs/active', { confirm: true }), 'DELETE /orgs/active');
  ok(await as(admin, 'POST', '/api/v1/orgs/switch', { orgId: second.id }), 'POST /orgs/switch');
  // Caches: an answer stored, then invalidated (an audit row).
  const cachedChat = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'an answer invalidated before the kill' }] };
  assert.equal((await op('POST', '/v1/chat/completions', cachedChat)).status, 200);
  assert.equal((await op('GET', '/api/v1/cache/stats')).body.stats.find((s: any) => s.cacheType === 'exact_response')?.entries, 1, 'the stored answer');
  ok(await op('POST', '/api/v1/cache/invalidate', { all: true }), 'POST /cache/invalidate');
  // Runs: ingestion, feedback, SDK trace events (a side effect's record among them).
  const ingested = ok(await op('POST', '/api/v1/ingest/prompt', { source: 'langchain', prompt: 'durable prompt' }), 'POST /ingest/prompt').runId;
  ok(await op('POST', `/api/v1/runs/${ingested}/feedback`, { type: 'rating', rating: 5 }), 'POST /runs/:id/feedback');
  ok(await op('POST', `/api/v1/runs/${ingested}/feedback/metrics`, { metrics: { score: 0.5 }, optimize: 'max', source: 'eval-harness' }), 'POST /runs/:id/feedback/metrics');
  ok(await op('POST', '/api/v1/trace', { runId: ingested, type: 'tool.called', payload: { name: 'lookup', args: {}, sideEffectLevel: 0 } }), 'POST /trace');
  ok(await op('POST', '/api/v1/trace', { runId: ingested, type: 'side_effect.planned', payload: { toolName: 'send_email', level: 3, payload: {}, idempotencyKey: 'mail-1' } }), 'POST /trace');
  const lastIngested = ok(await op('POST', '/api/v1/ingest/prompt', { source: 'langchain', prompt: 'the last write' }), 'POST /ingest/prompt').runId;
  server.child.kill('SIGKILL');
  await server.exited;

  const restarted = await startServe(t, dataDir, ENV);
  const again = clientOf(restarted);
  const read = async (answer: Promise<Answer>, label: string) => ok(await answer, label);

  const keys = (await read(again.op('GET', '/api/v1/keys?limit=200'), 'GET /keys')).keys as any[];
  assert.equal(keys.find((k) => k.id === key.id)?.mode, 'observe', 'the created key, in the mode its PATCH set');
  assert.equal(keys.find((k) => k.id === revoked.id)?.status, 'revoked', 'the revoked key');
  assert.equal((await read(again.op('GET', '/api/v1/settings'), 'GET /settings')).settings.retention_days, 12);
  const users = (await read(again.op('GET', '/api/v1/users?limit=200'), 'GET /users')).users as any[];
  assert.equal(users.find((u) => u.id === renamed.id)?.name, 'Renamed User', 'the created, renamed user');
  assert.equal(users.find((u) => u.id === deleted.id), undefined, 'the deleted user');
  ok(await again.as(null, 'POST', '/api/v1/auth/login', { email: 'renamed@example.test', password: resetByAdmin }), 'login with the reset temporary password');
  ok(await again.as(admin, 'GET', '/api/v1/auth/me'), 'the session of the password change');
  assert.equal((await again.as(loggedOut, 'GET', '/api/v1/auth/me')).status, 401, 'the logged-out session');
  const signer = await read(again.as(signedUp.cookie, 'GET', '/api/v1/auth/me'), 'the signup session');
  assert.equal(signer.user.emailVerified, true, 'the verified address');
  ok(await again.as(forgetfulLogin.cookie, 'GET', '/api/v1/auth/me'), 'the session of the login');
  const active = await read(again.as(admin, 'GET', '/api/v1/orgs/active'), 'GET /orgs/active');
  assert.equal(active.org.id, second.id, 'the switched-to organization');
  assert.equal(active.org.name, 'Second renamed');
  assert.equal(active.members.find((m: any) => m.userId === invitee.id)?.role, 'admin', 'the invitee, made admin');
  assert.equal(active.members.find((m: any) => m.userId === removed.id), undefined, 'the removed member');
  assert.equal(active.members.find((m: any) => m.userId === signerAccount.id)?.role, 'member', 'the signed-in account that accepted its invitation');
  assert.equal((await read(again.as(signedUp.cookie, 'GET', '/api/v1/orgs/active'), 'GET /orgs/active')).org.id, second.id, 'its session, moved there');
  assert.equal((await read(again.as(admin, 'GET', '/api/v1/orgs/active/onboarding'), 'GET onboarding')).dismissed, true, 'onboarding dismissed');
  const invites = (await read(again.as(admin, 'GET', '/api/v1/orgs/active/invites?limit=200'), 'GET invites')).invites as any[];
  assert.equal(invites.find((i) => i.id === revokedInvite.id)?.status, 'revoked', 'the revoked invitation');
  const orgs = (await read(again.as(admin, 'GET', '/api/v1/orgs?limit=200'), 'GET /orgs')).orgs as any[];
  assert.equal(orgs.find((o) => o.id === doomed.id), undefined, 'the deleted organization');
  // Each audited write's row, committed with its change (docs/api.md "A row per change made"), in its organization's
  // log, its chain intact.
  const auditRows = async (tenant?: string) => {
    const page = await read(again.op('GET', '/api/v1/audit?limit=500&verify=true', undefined, tenant), `GET /audit of ${tenant ?? 'the default organization'}`);
    assert.equal(page.integrity.ok, true);
    return (page.events as Array<{ action: string; target: string | null }>).map((e) => `${e.action} ${e.target}`);
  };
  const assertRows = (rows: string[], expected: Array<[action: string, target: string]>) => {
    for (const [action, target] of expected) assert.ok(rows.includes(`${action} ${target}`), `the ${action} row of ${target} in ${JSON.stringify(rows)}`);
  };
  const adminId = adminLogin.body.user.id;
  assertRows(await auditRows(), [
    ['key.create', key.id],
    ['key.mode_change', key.id],
    ['key.revoke', revoked.id],
    ['settings.update', 'retention_days'],
    ['user.create', renamed.id],
    ['user.update', renamed.id],
    ['user.reset_password', renamed.id],
    ['user.delete', deleted.id],
    ['user.password_change', adminId],
    ['user.password_reset', forgetful.id],
    ['cache.invalidate', 'all'],
  ]);
  assertRows(await auditRows(second.id), [
    ['org.create', second.id],
    ['org.switch', second.id],
    ['org.rename', second.id],
    ['user.signup', invitee.id],
    ['invite.create', invite.id],
    ['invite.accept', invite.id],
    ['invite.create', signerInvite.id],
    ['invite.accept', signerInvite.id],
    ['org.member_role', invitee.id],
    ['invite.revoke', revokedInvite.id],
    ['user.create', removed.id],
    ['org.member_remove', removed.id],
  ]);
  assertRows(await auditRows(signedUp.body.org.id), [
    ['user.signup', signerAccount.id],
    ['user.verify', signerAccount.id],
  ]);
  const exact = (await read(again.op('GET', '/api/v1/cache/stats'), 'GET /cache/stats')).stats.find((s: any) => s.cacheType === 'exact_response');
  assert.equal(exact?.entries ?? 0, 0, 'the invalidated answer');
  const run = await read(again.op('GET', `/api/v1/runs/${ingested}`), 'GET /runs/:id');
  assert.deepEqual(run.feedback.map((f: any) => f.type).sort(), ['metrics', 'rating']);
  assert.ok(run.events.some((e: any) => e.type === 'tool.called'), 'the tool.called event');
  assert.equal(run.sideEffects.length, 1, 'the planned side effect');
  ok(await again.op('GET', `/api/v1/runs/${lastIngested}`), 'the last ingested run');

  // The deleted organization's log is kept in the data file, its org.delete last (docs/accounts.md), read here once
  // svc is gone.
  restarted.child.kill('SIGTERM');
  await restarted.exited;
  const store = openStore({ dataDir });
  try {
    const kept = await store.read((sql) => sql.all<{ action: string; target: string }>('SELECT action, target FROM audit_events WHERE tenant_id = ? ORDER BY seq', [doomed.id]));
    assert.deepEqual(kept.at(-1), { action: 'org.delete', target: doomed.id });
  } finally {
    await store.close();
  }
});

test("SDK trace events appended to a run whose stream is still in flight survive a kill -9 right after their 201, side effects' records included", async (t) => {
  const dataDir = tempDir(t);
  // The stream's first delta goes out at once; the upstream never finishes it.
  const upstream = await startFakeUpstream(t, (_request, res) => {
    startSse(res);
    res.write(`data: ${JSON.stringify(contentChunk('held '))}\n\n`);
  });
  const server = await startServe(t, dataDir, { ...ENV, CHATCOMP_API_KEY: 'sk-durability-routes-00', CHATCOMP_BASE_URL: upstream.baseUrl });
  const { op } = clientOf(server);
  const stream = new AbortController();
  t.after(() => stream.abort());
  const streaming = await fetch(`${server.address}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${BOOT}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'a stream in flight' }] }),
    signal: stream.signal,
  });
  assert.equal(streaming.status, 200);
  const runId = streaming.headers.get('x-svc-run-id')!;
  // Read up to the first delta: the run's request is under way, its recorder owns the run.
  const reader = streaming.body!.getReader();
  for (let text = ''; !text.includes('held '); ) text += new TextDecoder().decode((await reader.read()).value);
  ok(await op('POST', '/api/v1/trace', { runId, type: 'tool.called', payload: { name: 'lookup', args: {}, sideEffectLevel: 0 } }), 'POST /trace');
  ok(await op('POST', '/api/v1/trace', { runId, type: 'side_effect.planned', payload: { toolName: 'send_email', level: 3, payload: {}, idempotencyKey: 'mail-in-flight' } }), 'POST /trace');
  server.child.kill('SIGKILL');
  await server.exited;

  const restarted = await startServe(t, dataDir, ENV);
  const run = ok(await clientOf(restarted).op('GET', `/api/v1/runs/${runId}`), 'GET /runs/:id');
  assert.ok(run.events.some((e: any) => e.type === 'tool.called'), 'the tool.called event');
  assert.ok(run.events.some((e: any) => e.type === 'side_effect.planned'), 'the side_effect.planned event');
  assert.equal(run.sideEffects.length, 1, 'the planned side effect\'s record');
});
