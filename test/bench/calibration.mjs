#!/usr/bin/env node
/**
 * A fixed piece of work of the kinds svc's CPU goes to (SQLite's WebAssembly writing rows, JSON, SHA-256), timed: how
 * fast the CPU the bench gives svc was during a run. This machine's speed moves by 1.4-1.8x from hour to hour (other
 * tenants), and every figure of a run moves with it; the bench prints this beside them so that runs of different
 * hours can be told apart by the machine rather than by the code (docs/performance.md, "Latest results").
 *
 * Run by lib's `cpuCalibration` on svc's CPU; prints one JSON line: the milliseconds of each part and their total.
 */
import { createRequire } from 'node:module';
import { hash } from 'node:crypto';
import { performance } from 'node:perf_hooks';

const { Database } = createRequire(import.meta.url)('node-sqlite3-wasm');

const ROWS = 20_000;
const body = {
  model: 'gpt-4o-mini',
  messages: [
    { role: 'system', content: 'You are terse.' },
    { role: 'user', content: 'Summarise the calibration item in one sentence, please, with every detail that matters.' },
  ],
  temperature: 0,
};

function sqlite() {
  const db = new Database(':memory:');
  try {
    db.exec('CREATE TABLE t (id TEXT PRIMARY KEY, tenant TEXT NOT NULL, n INTEGER NOT NULL, body TEXT NOT NULL, at INTEGER NOT NULL)');
    db.exec('CREATE INDEX t_tenant_at ON t (tenant, at)');
    const insert = db.prepare('INSERT INTO t (id, tenant, n, body, at) VALUES (?, ?, ?, ?, ?)');
    const text = JSON.stringify(body);
    db.exec('BEGIN');
    for (let i = 0; i < ROWS; i++) insert.run([`run_${String(i).padStart(20, '0')}`, 'default', i, text, 1_700_000_000_000 + i]);
    db.exec('COMMIT');
    insert.finalize();
  } finally {
    db.close();
  }
}

function json() {
  let length = 0;
  for (let i = 0; i < ROWS; i++) length += JSON.stringify(JSON.parse(JSON.stringify({ ...body, seed: i }))).length;
  return length;
}

function sha256() {
  const text = JSON.stringify(body).repeat(4);
  let last = '';
  for (let i = 0; i < ROWS; i++) last = hash('sha256', `${i}${text}`, 'hex');
  return last;
}

const parts = {};
for (const [name, work] of Object.entries({ sqlite, json, sha256 })) {
  const started = performance.now();
  work();
  parts[name] = performance.now() - started;
}
const totalMs = Object.values(parts).reduce((sum, ms) => sum + ms, 0);
process.stdout.write(`${JSON.stringify({ totalMs, parts })}\n`);
