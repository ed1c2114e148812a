/**
 * The reference client as a package export (`svc/client`, SPEC 4.20): what a consumer that installed svc gets, from
 * the built files only (dist/client.mjs and its declarations), at run time and to TypeScript.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'node:test';
import { promisify } from 'node:util';
import { build } from '../support/build.ts';
import { ensureBundle, ROOT, tempDir } from '../support/process.ts';

const run = promisify(execFile);

/** A consumer project with svc installed (node_modules/svc -> this repository). */
function consumer(t: import('node:test').TestContext): string {
  const dir = tempDir(t, 'svc-consumer-');
  mkdirSync(join(dir, 'node_modules'));
  symlinkSync(ROOT, join(dir, 'node_modules', 'svc'), 'dir');
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  return dir;
}

test('import { createSvcClient } from "svc/client" works at run time against a live svc', async (t) => {
  await ensureBundle();
  const { app } = await build(t);
  const baseUrl = await app.listen({ port: 0, host: '127.0.0.1' });
  const dir = consumer(t);
  writeFileSync(
    join(dir, 'main.mjs'),
    `import { createSvcClient, SvcApiError } from 'svc/client';
const client = createSvcClient({ baseUrl: process.argv[2], apiKey: null });
const result = await client.chat({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'from a package consumer' }] });
let notFound = null;
try { await client.call('GET', '/api/v1/runs/run_missing'); } catch (error) { notFound = error instanceof SvcApiError ? error.status : String(error); }
await client.close();
console.log(JSON.stringify({ route: result.route, runId: result.runId, provider: result.provider, notFound }));`,
  );
  const { stdout } = await run(process.execPath, ['main.mjs', baseUrl], { cwd: dir });
  const out = JSON.parse(stdout);
  assert.equal(out.route, 'live');
  assert.match(out.runId, /^run_/);
  assert.ok(out.provider);
  assert.equal(out.notFound, 404);
});

test('the package export carries declarations a strict TypeScript consumer compiles against', async (t) => {
  await ensureBundle();
  const dir = consumer(t);
  writeFileSync(
    join(dir, 'main.ts'),
    `import { createSvcClient, tracedTool, type ActiveOrg, type ChatResult, type User } from 'svc/client';
const client = createSvcClient({ baseUrl: 'http://127.0.0.1:8787' });
const users: Promise<{ users: User[] }> = client.users.list();
const org: Promise<ActiveOrg> = client.inOrg('org_1').orgs.active();
void users;
void org;
const answer: Promise<ChatResult> = client.chat({ model: 'gpt-4o-mini', messages: [] });
const provider: string | null = (await answer).provider;
void provider;
void tracedTool;
// @ts-expect-error the client has no such method: the declarations are real, not any
client.noSuchMethod();
// The runs list's filters and run detail's windows, as svc documents them.
const detail = client.runs.get('run_1', { limit: 1, sideEffectLimit: 5, feedbackLimit: 2, feedbackBefore: 3 });
const feedbackTotal: Promise<number> = detail.then((answer) => answer.feedbackWindow.total);
void feedbackTotal;
void client.runs.list({ status: 'completed', route: 'exact_cache', since: 0 });
// @ts-expect-error not a run status
void client.runs.list({ status: 'done' });
// @ts-expect-error svc's runs list has no app filter
void client.runs.list({ app: 'checkout' });
`,
  );
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({ compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2022', strict: true, noEmit: true, skipLibCheck: true, types: ['node'], typeRoots: [join(ROOT, 'node_modules/@types')] }, files: ['main.ts'] }),
  );
  const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  const result = await run(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: dir }).catch((error) => error);
  assert.equal(result.code ?? 0, 0, `${result.stdout ?? ''}${result.stderr ?? ''}`);
});
