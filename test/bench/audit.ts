/**
 * Audit-log page cost by reader (docs/performance-notes.md): a tenant-wide admin's page against a member's, whose
 * page is filtered by the read scope (src/audit/service.ts), each also filtered by a rare decision (`deny`, one row in
 * 10,000). N audit rows (default 200,000; BENCH_AUDIT_ROWS) in a key-heavy log a member sees little of, and N in a
 * log a member mostly sees, written through the audit repository, not over HTTP.
 * Run with: node --import tsx test/bench/audit.ts
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createAuditRepository, type AuditScope } from '../../src/audit/repo.ts';
import { openStore } from '../../src/store/store.ts';

const ROWS = Number(process.env.BENCH_AUDIT_ROWS ?? 200_000);
const TENANT = 'ten_bench';
const OPEN_TENANT = 'ten_open';
const MEMBER: AuditScope = { userId: 'usr_member', keysOfApp: null };

const dir = mkdtempSync(join(tmpdir(), 'svc-audit-bench-'));
const store = openStore({ dataDir: dir, templateDir: null });
const repo = createAuditRepository(store);
try {
  // Mostly key rows (what a busy tenant's automation writes), a settings row now and then.
  const batch = 10_000;
  for (let start = 0; start < ROWS; start += batch) {
    await store.write((sql) => {
      for (let i = start; i < Math.min(ROWS, start + batch); i++) {
        const visible = i % 1000 === 0;
        repo.appendIn(
          sql,
          {
            tenantId: TENANT,
            action: visible ? 'settings.update' : 'key.create',
            // A denied write now and then (1 in 10,000): a page filtered by decision looks for rare rows.
            decision: i % 10_000 === 5 ? 'deny' : 'allow',
            actor: { kind: 'api_key', keyId: `key_${i % 50}` },
            target: visible ? 'retention_days' : `key_${i}`,
            details: visible ? { key: 'retention_days', value: 30 } : { appId: 'app-a' },
          },
          Date.now(),
        );
      }
    });
  }
  // A second tenant whose log a member mostly reads: settings changes, every other one the member's own.
  for (let start = 0; start < ROWS; start += batch) {
    await store.write((sql) => {
      for (let i = start; i < Math.min(ROWS, start + batch); i++) {
        repo.appendIn(
          sql,
          {
            tenantId: OPEN_TENANT,
            action: 'settings.update',
            decision: i % 10_000 === 5 ? 'deny' : 'allow',
            actor: i % 2 === 0 ? { kind: 'user', userId: 'usr_member' } : { kind: 'api_key', keyId: `key_${i % 50}` },
            target: 'retention_days',
            details: { key: 'retention_days', value: 30 },
          },
          Date.now(),
        );
      }
    });
  }
  const time = async (label: string, scope?: AuditScope, decision?: 'deny', tenant = TENANT) => {
    const samples: number[] = [];
    for (let i = 0; i < 15; i++) {
      const started = performance.now();
      await repo.list(tenant, { limit: 50, ...(scope ? { scope } : {}), ...(decision ? { decision } : {}) });
      samples.push(performance.now() - started);
    }
    samples.sort((a, b) => a - b);
    console.log(`${label}: p50 ${samples[7]!.toFixed(1)} ms, max ${samples.at(-1)!.toFixed(1)} ms`);
  };
  await time(`admin page of 50 (${ROWS} rows)`);
  await time('member page of 50', MEMBER);
  await time('non-admin key page of 50', { ...MEMBER, userId: null });
  await time('app-pinned admin key page of 50', { userId: null, keysOfApp: 'app-a' });
  await time('admin page of 50, decision=deny', undefined, 'deny');
  await time('member page of 50, decision=deny', MEMBER, 'deny');
  await time('non-admin key page of 50, decision=deny', { ...MEMBER, userId: null }, 'deny');
  await time('app-pinned admin key page of 50, decision=deny', { userId: null, keysOfApp: 'app-a' }, 'deny');
  await time(`a log a member mostly reads (${ROWS} rows): member page of 50`, MEMBER, undefined, OPEN_TENANT);
  await time('  member page of 50, decision=deny', MEMBER, 'deny', OPEN_TENANT);
  await time('  admin page of 50, decision=deny', undefined, 'deny', OPEN_TENANT);
} finally {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
