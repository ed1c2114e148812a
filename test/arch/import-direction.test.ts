/**
 * DESIGN.md section 1, rule of direction: core imports nothing of ours; store imports only core; services and
 * repositories never import fastify or any routes; a service never reaches into another area's repository; the CLI
 * and the dashboard never import repositories (the CLI's in-process connection goes through services + the app).
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import test from 'node:test';
import { ROOT } from '../support/process.ts';

function files(dir: string): string[] {
  const out: string[] = [];
  let entries: string[] = [];
  try {
    entries = readdirSync(dir);
  } catch {
    return out;
  }
  for (const name of entries) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...files(path));
    else if (/\.tsx?$/.test(name)) out.push(path);
  }
  return out;
}

interface Import {
  from: string;
  spec: string;
  /** Repository-relative target for our own modules; the package name otherwise. */
  target: string;
}

function importsOf(file: string): Import[] {
  const text = readFileSync(file, 'utf8');
  const out: Import[] = [];
  for (const match of text.matchAll(/^\s*(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]|^\s*import\s+['"]([^'"]+)['"]/gm)) {
    const spec = (match[1] ?? match[2])!;
    const target = spec.startsWith('.') ? relative(ROOT, resolve(dirname(file), spec)) : spec;
    out.push({ from: relative(ROOT, file), spec, target });
  }
  return out;
}

const all = [...files(join(ROOT, 'src')), ...files(join(ROOT, 'cli')), ...files(join(ROOT, 'dashboard'))].flatMap(importsOf);
const area = (path: string) => path.split('/')[1];

test('the import scanner sees the codebase', () => {
  assert.ok(all.length > 100);
  assert.ok(all.some((i) => i.from === 'src/http/app.ts' && i.target === 'fastify'));
});

test('src/core imports nothing of ours outside src/core', () => {
  const bad = all.filter((i) => i.from.startsWith('src/core/') && i.spec.startsWith('.') && !i.target.startsWith('src/core/'));
  assert.deepEqual(bad, []);
});

test('src/store imports only src/core and itself', () => {
  const bad = all.filter((i) => i.from.startsWith('src/store/') && i.spec.startsWith('.') && !/^src\/(core|store)\//.test(i.target));
  assert.deepEqual(bad, []);
});

test('services and repositories never import fastify or routes', () => {
  const bad = all.filter(
    (i) => /[/-](service|repo)\.ts$/.test(i.from) && (i.target === 'fastify' || i.target.startsWith('@fastify/') || /routes\.ts$/.test(i.target)),
  );
  assert.deepEqual(bad, []);
});

test("a service never imports another area's repository", () => {
  const bad = all.filter(
    (i) =>
      /^src\/[^/]+\/([a-z-]+-)?service\.ts$/.test(i.from) && /^src\/[^/]+\/([a-z-]+-)?repo\.ts$/.test(i.target) && area(i.from) !== area(i.target),
  );
  assert.deepEqual(bad, [], 'use the other area’s service (the composition root src/services.ts wires repositories)');
});

test('the CLI and the dashboard never import repositories', () => {
  const bad = all.filter((i) => /^(cli|dashboard)\//.test(i.from) && /\/repo\.ts$/.test(i.target));
  assert.deepEqual(bad, []);
});
