/**
 * Paging through `GET /api/v1/audit` (docs/api.md "Audit log"): a page holds at most 500 events, and `before` (an
 * exclusive `seq`, the page's `window.nextBefore`) reaches the older ones, with the caller's visibility kept.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import { bearer, json } from '../support/build.ts';
import { BOOT, buildWithAdmin, makeUser } from '../support/accounts.ts';

type Row = { seq: number; action: string; target: string | null };
type Page = { events: Row[]; window: { limit: number; count: number; hasMore: boolean; nextBefore: number | null } };

/** Every event `get` reads, following `window.nextBefore` from the newest page down to the oldest. */
async function walk(get: (query: string) => Promise<Page>, limit: number): Promise<{ rows: Row[]; pages: number }> {
  const rows: Row[] = [];
  let query = `limit=${limit}`;
  for (let pages = 1; pages < 100; pages++) {
    const page = await get(query);
    assert.equal(page.window.count, page.events.length);
    rows.push(...page.events);
    if (!page.window.hasMore) {
      assert.equal(page.window.nextBefore, null);
      return { rows, pages };
    }
    assert.equal(page.window.nextBefore, page.events.at(-1)!.seq, 'the next page starts below the oldest event shown');
    query = `limit=${limit}&before=${page.window.nextBefore}`;
  }
  throw new Error('no last page');
}

test('an admin pages past 500 events with before = window.nextBefore, down to the first event', async (t) => {
  const { app, services } = await buildWithAdmin(t);
  for (let i = 0; i < 520; i++) await services.audit.recordAs({ kind: 'system' }, 'default', 'settings.update', { target: `s${i}` });
  const total = json(await app.inject({ url: '/api/v1/audit?limit=1&verify=true', headers: bearer(BOOT) })).integrity.count;
  assert.ok(total >= 520);

  const { rows, pages } = await walk(async (query) => json(await app.inject({ url: `/api/v1/audit?${query}`, headers: bearer(BOOT) })), 500);
  assert.equal(pages, 2);
  assert.deepEqual(
    rows.map((row) => row.seq),
    Array.from({ length: total }, (_, i) => total - i),
    'every event once, newest first',
  );
});

test("a member's pages hold only the events they may read, each page full, across the whole log", async (t) => {
  const { app, services } = await buildWithAdmin(t);
  const { browser: member } = await makeUser(app, { email: 'member@example.test' });
  // Withheld rows (others' keys) between the ones a member reads: they must take no place on any page.
  for (let i = 0; i < 7; i++) {
    await services.audit.recordAs({ kind: 'system' }, 'default', 'org.rename', { target: `visible-${i}` });
    await services.audit.recordAs({ kind: 'system' }, 'default', 'key.create', { target: `key_hidden_${i}` });
    await services.audit.recordAs({ kind: 'system' }, 'default', 'invite.create', { target: `inv_hidden_${i}` });
  }
  const everything: Row[] = json(await app.inject({ url: '/api/v1/audit?limit=500', headers: bearer(BOOT) })).events;
  const readable: Row[] = json(await member.get('/api/v1/audit?limit=500')).events;
  assert.ok(readable.length < everything.length);

  const { rows } = await walk(async (query) => {
    const page: Page = json(await member.get(`/api/v1/audit?${query}`));
    if (page.window.hasMore) assert.equal(page.events.length, 2, 'a page not yet the last is full');
    return page;
  }, 2);
  assert.deepEqual(rows, readable, 'the pages together are the events the member reads, in order');
  assert.ok(!rows.some((row) => /^(key|invite)\./.test(row.action)));
});

test('before is an exclusive seq of at least 1; a bad one is 400 invalid_request', async (t) => {
  const { app, services } = await buildWithAdmin(t);
  for (let i = 0; i < 3; i++) await services.audit.recordAs({ kind: 'system' }, 'default', 'settings.update', { target: `s${i}` });
  const newest: Page = json(await app.inject({ url: '/api/v1/audit?limit=1', headers: bearer(BOOT) }));
  const seq = newest.events[0]!.seq;
  const below: Page = json(await app.inject({ url: `/api/v1/audit?limit=1&before=${seq}`, headers: bearer(BOOT) }));
  assert.equal(below.events[0]!.seq, seq - 1);
  const none: Page = json(await app.inject({ url: '/api/v1/audit?before=1', headers: bearer(BOOT) }));
  assert.deepEqual(none.events, []);
  assert.deepEqual(none.window, { limit: 50, count: 0, hasMore: false, nextBefore: null });
  for (const bad of ['0', '-1', '1e3', 'x']) {
    const response = await app.inject({ url: `/api/v1/audit?before=${bad}`, headers: bearer(BOOT) });
    assert.equal(response.statusCode, 400, bad);
    assert.equal(json(response).error.code, 'invalid_request');
  }
});
