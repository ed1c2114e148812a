/**
 * What a management write writes to the data file's log, read from the log itself: each frame of `svc.db-wal` is one
 * page a commit wrote, and `dbstat` names the table or index each page belongs to. A page the log holds for an index
 * entry no query can read is written, flushed and copied into the data file at every such write for nothing.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test, { type TestContext } from 'node:test';
import { json } from '../support/build.ts';
import { ADMIN, BOOT, buildAccounts, makeUser, operator } from '../support/accounts.ts';
import { DATA_FILE_NAME, type Store } from '../../src/store/store.ts';

const WAL_HEADER_BYTES = 32;
const FRAME_HEADER_BYTES = 24;

/**
 * The log's valid frames, in order: those carrying the salts of its header (SQLite's WAL format), by page number, and
 * the salts, which change when a write starts the log over after a checkpoint copied all of it into the data file.
 */
function loggedPages(walPath: string): { salts: string; pages: number[] } {
  const log = readFileSync(walPath);
  if (log.length < WAL_HEADER_BYTES) return { salts: '', pages: [] };
  const pageSize = log.readUInt32BE(8);
  const salts = [log.readUInt32BE(16), log.readUInt32BE(20)];
  const pages: number[] = [];
  for (let at = WAL_HEADER_BYTES; at + FRAME_HEADER_BYTES + pageSize <= log.length; at += FRAME_HEADER_BYTES + pageSize) {
    if (log.readUInt32BE(at + 8) !== salts[0] || log.readUInt32BE(at + 12) !== salts[1]) break;
    pages.push(log.readUInt32BE(at));
  }
  return { salts: salts.join('.'), pages };
}

/**
 * The tables and indexes whose pages `write` put in the log. svc checkpoints after ~40 ms of writing, which a loaded
 * machine reaches within one test: when the write started the log over, every frame of the new log is its own.
 */
async function btreesWritten(store: Store, dir: string, write: () => Promise<void>): Promise<string[]> {
  const walPath = join(dir, `${DATA_FILE_NAME}-wal`);
  await store.flush();
  const before = loggedPages(walPath);
  await write();
  await store.flush();
  const after = loggedPages(walPath);
  const ours = after.salts === before.salts ? after.pages.slice(before.pages.length) : after.pages;
  assert.ok(ours.length > 0, 'the write is in the log');
  const owners = new Map(
    (await store.read((sql) => sql.all<{ name: string; pageno: number }>('SELECT name, pageno FROM dbstat'))).map((row) => [row.pageno, row.name]),
  );
  return [...new Set(ours.map((page) => owners.get(page) ?? `page ${page}`))].sort();
}

function dataDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'svc-write-pages-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const ACTOR_USER_INDEXES = ['audit_events_actor_user', 'audit_events_actor_user_decision'];
const APP_INDEXES = ['audit_events_app', 'audit_events_app_decision'];

test("an audit row enters the indexes of its actor's user and its key's app only when it names one", async (t) => {
  const dir = dataDir(t);
  const { app, services } = await buildAccounts(t, {
    dataDir: dir,
    env: { SVC_API_KEY: BOOT, SVC_ADMIN_EMAIL: ADMIN.email, SVC_ADMIN_PASSWORD: ADMIN.password },
  });
  const store = services.store;
  const put = (headers: Record<string, string>, value: number) => async () => {
    const response = await app.inject({ method: 'PUT', url: '/api/v1/settings', headers, payload: { key: 'retention_days', value } });
    assert.equal(response.statusCode, 200, response.body);
  };
  const createKey = (payload: Record<string, unknown>) => async () => {
    const response = await app.inject({ method: 'POST', url: '/api/v1/keys', headers: operator(BOOT), payload: { name: 'k', ...payload } });
    assert.equal(response.statusCode, 201, response.body);
  };

  await put(operator(BOOT), 10)(); // the setting's row exists: the changes below update it

  // The operator's settings change: no user acts, no app is named. Its row is read by tenant, decision, admin_only and
  // target, never by a user or an app it does not have.
  const byOperator = await btreesWritten(store, dir, put(operator(BOOT), 11));
  for (const index of [...ACTOR_USER_INDEXES, ...APP_INDEXES]) assert.ok(!byOperator.includes(index), `${index} written: ${byOperator.join(', ')}`);
  assert.deepEqual(
    byOperator,
    [
      'audit_events',
      'audit_events_decision',
      'audit_events_open',
      'audit_events_open_decision',
      'audit_events_target',
      'audit_events_target_decision',
      'settings',
      'sqlite_autoindex_audit_events_1',
      'sqlite_autoindex_audit_events_2',
    ],
  );
  const unpinnedKey = await btreesWritten(store, dir, createKey({}));
  for (const index of [...ACTOR_USER_INDEXES, ...APP_INDEXES]) assert.ok(!unpinnedKey.includes(index), `${index} written: ${unpinnedKey.join(', ')}`);

  // Rows that name them are indexed, as a member's and an app-pinned admin key's pages read them.
  const pinnedKey = await btreesWritten(store, dir, createKey({ appId: 'app-a' }));
  for (const index of APP_INDEXES) assert.ok(pinnedKey.includes(index), `${index} not written: ${pinnedKey.join(', ')}`);
  const { browser: member } = await makeUser(app, { email: 'member@example.test', orgRole: 'admin' });
  const byUser = await btreesWritten(store, dir, async () => {
    const response = await member.request('PUT', '/api/v1/settings', { key: 'retention_days', value: 12 });
    assert.equal(response.statusCode, 200, response.body);
  });
  for (const index of ACTOR_USER_INDEXES) assert.ok(byUser.includes(index), `${index} not written: ${byUser.join(', ')}`);
  for (const index of APP_INDEXES) assert.ok(!byUser.includes(index), `${index} written: ${byUser.join(', ')}`);

  // And each still finds its rows.
  const pinnedAdmin = json(
    await app.inject({ method: 'POST', url: '/api/v1/keys', headers: operator(BOOT), payload: { name: 'pinned', admin: true, appId: 'app-a' } }),
  ).token as string;
  const appPage = json(await app.inject({ url: '/api/v1/audit?limit=50', headers: { authorization: `Bearer ${pinnedAdmin}` } })).events as Array<{ action: string; details: { appId?: string } }>;
  assert.ok(appPage.some((row) => row.action === 'key.create' && row.details.appId === 'app-a'));
});
