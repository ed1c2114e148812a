/**
 * Where on the command line options go (bin/svc as a child process, in-process on a temp data directory): the root's
 * options before the command, a command's own after it, and option values that look like options.
 */
import assert from 'node:assert/strict';
import test, { before, describe } from 'node:test';
import { ensureBundle, runSvc, tempDir } from '../support/process.ts';

before(ensureBundle);

describe('the command line', { concurrency: true }, () => {
  test("the root's -v/--version is not read inside a command's arguments: it is a value there, or an unknown option", async (t) => {
    const dataDir = tempDir(t);
    // A script's `--name "$NAME"` with NAME=-v printed the version and exited 0 having created nothing.
    const named = await runSvc(['keys', 'create', '--data-dir', dataDir, '--json', '--name', '-v']);
    assert.equal(named.code, 0, named.stderr);
    assert.equal(JSON.parse(named.stdout).key.name, '-v');
    for (const flag of ['-v', '--version']) {
      const misplaced = await runSvc(['keys', 'list', '--data-dir', dataDir, flag]);
      assert.equal(misplaced.code, 2, `keys list ${flag}: ${misplaced.stdout}`);
      assert.match(misplaced.stderr, new RegExp(`unknown option '${flag}'`));
    }
  });
});
