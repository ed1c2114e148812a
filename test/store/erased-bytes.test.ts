/**
 * What svc deletes is gone from the data file's bytes, not only from its tables (docs/gateway.md "Retention",
 * docs/accounts.md): a real data directory, prompts and answers carrying a mark (answers from the mock provider, the
 * prompt's words in them), the data file closed and searched byte by byte for the mark after each kind of deletion.
 * Each test first sees the mark in the closed file, written there by an earlier process (as retention meets data
 * written days before), so that its absence after the deletion says the deletion overwrote it.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test, { type TestContext } from 'node:test';
import { bearer, json } from '../support/build.ts';
import { ADMIN, BOOT, buildAccounts, MovableClock, operator, type AccountsApp } from '../support/accounts.ts';
import { createRunsRepository } from '../../src/evidence/repo.ts';
import { DATA_FILE_NAME } from '../../src/store/store.ts';

const DAY = 86_400_000;

/** Long enough that a prompt, an answer and a trace payload each spill into overflow pages (4 KB pages). */
const padding = (mark: string) => `${mark} `.repeat(400);

function dataDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'svc-erased-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** How many times `mark` occurs in the raw bytes of the closed data file; its log must be gone (closing checkpoints it). */
function occurrences(dir: string, mark: string): number {
  assert.equal(existsSync(join(dir, `${DATA_FILE_NAME}-wal`)), false, 'a clean close leaves no log');
  const bytes = readFileSync(join(dir, DATA_FILE_NAME));
  const needle = Buffer.from(mark);
  let count = 0;
  for (let at = bytes.indexOf(needle); at !== -1; at = bytes.indexOf(needle, at + 1)) count++;
  return count;
}

/** One svc process on `dir` (a subtest), in login mode with the bootstrap operator, its store closed when `body` ends. */
async function inProcess<T>(t: TestContext, dir: string, clock: MovableClock, body: (app: AccountsApp) => Promise<T>) {
  let result!: T;
  await t.test('svc runs', async (inner) => {
    const app = await buildAccounts(inner, {
      dataDir: dir,
      env: { SVC_API_KEY: BOOT, SVC_ADMIN_EMAIL: ADMIN.email, SVC_ADMIN_PASSWORD: ADMIN.password },
      overrides: { clock },
    });
    result = await body(app);
    await app.services.store.flush();
  });
  return result;
}

/** Ask `count` marked questions with `token`: each a run with its trace, and a cached answer. */
async function askMarked(app: AccountsApp['app'], token: string, mark: string, count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    const response = await app.inject({
      method: 'POST',
      url: '/v1/chat/completions',
      headers: bearer(token),
      payload: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: `${i} ${padding(mark)}` }] },
    });
    assert.equal(response.statusCode, 200, response.body);
  }
}

async function newKey(app: AccountsApp['app'], orgId?: string): Promise<string> {
  const created = await app.inject({ method: 'POST', url: '/api/v1/keys', headers: operator(BOOT, orgId), payload: { name: 'k' } });
  assert.equal(created.statusCode, 201, created.body);
  return json(created).token;
}

test('a retention pass overwrites the expired runs, traces and cached answers in the data file', async (t) => {
  const dir = dataDir(t);
  const clock = new MovableClock();
  const mark = 'RETAINEDxMARK';
  await inProcess(t, dir, clock, async ({ app }) => askMarked(app, await newKey(app), mark, 30));
  assert.ok(occurrences(dir, mark) > 0, 'the marked prompts are in the file before the pass');

  clock.advance(31 * DAY);
  const report = await inProcess(t, dir, clock, async ({ services }) => {
    const passed = await services.retention.runOnce();
    // Off again once the pass is over, for the writes to come (the ledger's among them). Read through a statement
    // never prepared before: this pragma's value is taken when its statement is prepared.
    const after = await services.store.read((sql) => sql.get<{ secure_delete: number }>('PRAGMA secure_delete -- after the pass'));
    assert.equal(after?.secure_delete, 0);
    return passed;
  });
  assert.equal(report.runsDeleted, 30);
  assert.ok(report.cacheEntriesDeleted > 0);
  assert.equal(occurrences(dir, mark), 0);
});

test("a deleted organization's purge overwrites its runs and cached answers; a deleted user's password hash goes", async (t) => {
  const dir = dataDir(t);
  const clock = new MovableClock();
  const mark = 'PURGEDxMARK';
  const { orgId, userId, hash } = await inProcess(t, dir, clock, async ({ app, services }) => {
    const created = await app.inject({ method: 'POST', url: '/api/v1/users', headers: operator(BOOT), payload: { email: 'leaving@example.test', tempPassword: 'temporary-pass-1' } });
    assert.equal(created.statusCode, 201, created.body);
    const userId = json(created).user.id as string;
    const org = await app.inject({ method: 'POST', url: '/api/v1/orgs', headers: bearer(BOOT), payload: { name: 'Leaving', ownerEmail: ADMIN.email } });
    assert.equal(org.statusCode, 201, org.body);
    const orgId = json(org).org.id as string;
    await askMarked(app, await newKey(app, orgId), mark, 10);
    const { hash } = (await services.store.read((sql) => sql.get<{ hash: string }>('SELECT password_hash AS hash FROM users WHERE id = ?', [userId])))!;
    return { orgId, userId, hash };
  });
  assert.ok(occurrences(dir, mark) > 0 && occurrences(dir, hash) > 0, 'the marks are in the file before the deletions');

  await inProcess(t, dir, clock, async ({ app, services }) => {
    const deletedUser = await app.inject({ method: 'DELETE', url: `/api/v1/users/${userId}`, headers: operator(BOOT) });
    assert.equal(deletedUser.statusCode, 200, deletedUser.body);
    const deletedOrg = await app.inject({ method: 'DELETE', url: '/api/v1/orgs/active', headers: operator(BOOT, orgId), payload: { confirm: true } });
    assert.equal(deletedOrg.statusCode, 200, deletedOrg.body);
    await services.retention.purgeDeleted();
  });
  assert.equal(occurrences(dir, mark), 0);
  assert.equal(occurrences(dir, hash), 0);
});

test('an invalidation overwrites the cached answers it deletes', async (t) => {
  const dir = dataDir(t);
  const clock = new MovableClock();
  const mark = 'INVALIDATEDxMARK';
  await inProcess(t, dir, clock, async ({ app, services }) => {
    await askMarked(app, await newKey(app), mark, 10);
    await services.store.flush();
    // The runs go (as retention deletes them), so that only the cached answers hold the mark.
    await createRunsRepository(services.store).pruneTenantRuns('default', Number.MAX_SAFE_INTEGER, 1000);
  });
  assert.ok(occurrences(dir, mark) > 0, 'the cached answers hold the mark');

  await inProcess(t, dir, clock, async ({ app }) => {
    const invalidated = await app.inject({ method: 'POST', url: '/api/v1/cache/invalidate', headers: operator(BOOT), payload: { all: true } });
    assert.equal(invalidated.statusCode, 200, invalidated.body);
    assert.equal(json(invalidated).invalidated, 10);
  });
  assert.equal(occurrences(dir, mark), 0);
});
