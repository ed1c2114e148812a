/** A new data file from the build's template (src/store/template.ts): the same file the migrations make, or none. */
import assert from 'node:assert/strict';
import { existsSync, lstatSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test, { before } from 'node:test';
import sqlite from 'node-sqlite3-wasm';
import { MIGRATIONS } from '../../src/store/migrations.ts';
import { DATA_FILE_NAME, openStore, type Store } from '../../src/store/store.ts';
import { templateFileName } from '../../src/store/template.ts';
import { writeTemplate } from '../../src/store/write-template.ts';
import { ensureBundle, runSvc, tempDir } from '../support/process.ts';

before(ensureBundle);

interface SchemaRow {
  type: string;
  name: string;
  tbl_name: string;
  sql: string | null;
}

function schemaOf(store: Store): Promise<SchemaRow[]> {
  return store.read((sql) => sql.all<SchemaRow>('SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name'));
}

function migrationsOf(store: Store): Promise<Array<{ version: number; name: string; applied_at: number }>> {
  return store.read((sql) => sql.all('SELECT version, name, applied_at FROM schema_migrations ORDER BY version'));
}

/** A table only the template has, so a test can tell a copy of it from a file the migrations made. */
function markTemplate(path: string): void {
  assert.equal(existsSync(`${path}-wal`), false);
  const db = new sqlite.Database(path);
  // The file is in write-ahead-log mode, which this engine opens only exclusively (no shared memory).
  db.exec('PRAGMA locking_mode = EXCLUSIVE');
  db.exec('CREATE TABLE template_marker (id INTEGER)');
  db.close();
  assert.equal(existsSync(`${path}-wal`), false, 'the marked template is one file again');
}

const hasMarker = (store: Store) => store.read((sql) => sql.get("SELECT name FROM sqlite_master WHERE name = 'template_marker'") !== undefined);

test('a data file made from the template has the schema and the migration records the migrations make', async (t) => {
  const templates = tempDir(t);
  const path = await writeTemplate(templates);
  assert.equal(path, join(templates, templateFileName(MIGRATIONS)));
  assert.equal(existsSync(`${path}-wal`), false, 'the template is one self-contained file');

  const started = Date.now();
  const migrated = openStore({ dataDir: tempDir(t), templateDir: null });
  t.after(() => migrated.close());
  const copied = openStore({ dataDir: tempDir(t), templateDir: templates });
  t.after(() => copied.close());

  assert.deepEqual(await schemaOf(copied), await schemaOf(migrated));
  assert.equal(copied.schemaVersion, migrated.schemaVersion);
  const records = await migrationsOf(copied);
  assert.deepEqual(
    records.map(({ version, name }) => ({ version, name })),
    (await migrationsOf(migrated)).map(({ version, name }) => ({ version, name })),
  );
  // Recorded as applied when this data file was made, not when the build ran.
  for (const record of records) assert.ok(record.applied_at >= started, `migration ${record.version} stamped ${record.applied_at}`);
});

test('a new data file is a private copy of the template; writes and reopening work on it', async (t) => {
  const templates = tempDir(t);
  markTemplate(await writeTemplate(templates));
  const dataDir = tempDir(t);
  const store = openStore({ dataDir, templateDir: templates });
  assert.ok(await hasMarker(store), 'made from the template');
  assert.equal(statSync(join(dataDir, DATA_FILE_NAME)).mode & 0o777, 0o600);
  assert.equal(existsSync(join(dataDir, `${DATA_FILE_NAME}.template`)), false);
  await store.write((sql) => sql.run("INSERT INTO tenants (id, name, created_at) VALUES ('t1', 'one', 1)"));
  await store.close();

  const reopened = openStore({ dataDir, templateDir: templates });
  t.after(() => reopened.close());
  assert.equal(await reopened.read((sql) => sql.get<{ n: number }>('SELECT COUNT(*) AS n FROM tenants')!.n), 1);
});

test('the template of other migrations, or an existing data file, is never used', async (t) => {
  const templates = tempDir(t);
  const extra = { version: 999, name: 'extra', sql: 'CREATE TABLE extra_one (id TEXT)' };
  markTemplate(await writeTemplate(templates, [...MIGRATIONS, extra]));

  // Other migrations: they run instead.
  const other = openStore({ dataDir: tempDir(t), templateDir: templates });
  t.after(() => other.close());
  assert.equal(await hasMarker(other), false);
  assert.equal(await other.read((sql) => sql.get("SELECT name FROM sqlite_master WHERE name = 'extra_one'")), undefined);

  // Its own migrations, but the data file exists (empty: its pages could be in the log still).
  const dataDir = tempDir(t);
  writeFileSync(join(dataDir, DATA_FILE_NAME), '');
  const existing = openStore({ dataDir, migrations: [...MIGRATIONS, extra], templateDir: templates });
  t.after(() => existing.close());
  assert.equal(await hasMarker(existing), false);
  assert.ok(await existing.read((sql) => sql.get("SELECT name FROM sqlite_master WHERE name = 'extra_one'")));
});

test('writing a template removes the templates of other migrations', async (t) => {
  const templates = tempDir(t);
  const old = await writeTemplate(templates, MIGRATIONS.slice(0, -1));
  const current = await writeTemplate(templates);
  assert.notEqual(old, current);
  assert.equal(existsSync(old), false);
  assert.ok(existsSync(current));
});

test('a symlink where the copy of the template is made is replaced, never written through nor chmodded', async (t) => {
  // Stands for a file svc must not touch (another user's, /etc/passwd): a name in the data directory left pointing
  // at it (a restored backup, a mistake) must not make svc overwrite it with its data or narrow its mode.
  const outside = join(tempDir(t), 'not-svcs');
  const content = 'root:x:0:0:root:/root:/bin/sh\n';
  writeFileSync(outside, content, { mode: 0o644 });
  const dataDir = join(tempDir(t), 'data');
  mkdirSync(dataDir, { mode: 0o700 });
  symlinkSync(outside, join(dataDir, `${DATA_FILE_NAME}.template`));

  const result = await runSvc(['keys', 'list', '--data-dir', dataDir]);
  assert.equal(result.code, 0, result.stderr);
  assert.ok(readFileSync(outside, 'utf8') === content, 'the file the symlink names holds what it held');
  assert.equal(statSync(outside).mode & 0o777, 0o644);
  const dataFile = lstatSync(join(dataDir, DATA_FILE_NAME));
  assert.ok(dataFile.isFile(), 'the data file is a file of its own, not the symlink renamed into place');
  assert.equal(dataFile.mode & 0o777, 0o600);
});
