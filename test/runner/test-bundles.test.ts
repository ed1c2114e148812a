/**
 * The bundles test/run.mjs runs test files from (test/support/test-bundles.mjs): a module's import.meta still means
 * its .ts file, not the bundle (the tests find fixtures, the repository and the data beside src/ files by it), and a
 * stack names the .ts file's lines.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import test from 'node:test';
import { pathToFileURL } from 'node:url';
import { ROOT } from '../support/process.ts';
import { bundleTestFiles } from '../support/test-bundles.mjs';

const FIXTURE = 'test/fixtures/import-meta-bundled.ts';

test("a bundled module's import.meta and stack name its .ts file", async (t) => {
  const { bundles, outdir, remove } = await bundleTestFiles(ROOT, [FIXTURE]);
  t.after(remove);
  const bundle = bundles.get(FIXTURE)!;
  assert.ok(bundle.startsWith(outdir) && existsSync(bundle));

  const run = spawnSync(process.execPath, ['--enable-source-maps', bundle], { encoding: 'utf8' });
  const source = join(ROOT, FIXTURE);
  assert.deepEqual(JSON.parse(run.stdout), {
    url: pathToFileURL(source).href,
    dirname: join(ROOT, 'test', 'fixtures'),
    filename: source,
    beside: join(ROOT, 'test', 'fixtures', 'hung-terminal-test.ts'),
  });
  assert.match(run.stderr, /Error: thrown by the fixture\n\s+at .*test\/fixtures\/import-meta-bundled\.ts:9:7\)/);
});

test('remove() takes the bundles away', async () => {
  const { outdir, remove } = await bundleTestFiles(ROOT, [FIXTURE]);
  remove();
  assert.equal(existsSync(outdir), false);
});
