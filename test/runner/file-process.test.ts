/**
 * test/run.mjs ends everything a test file started, however the file ends (test/support/file-process.mjs): killed at
 * its file timeout, its process killed by SIGKILL from outside, or the run ended by a signal (Ctrl-C at a terminal,
 * which reaches the run and not the files' own process groups). The file (test/fixtures/hung-runner-file.ts) holds a
 * child process and a temp directory its cleanups do not know of, as a SIGKILLed file's know of nothing: neither may
 * outlive it.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import test, { type TestContext } from 'node:test';
import { processRuns, ROOT, tempDir } from '../support/process.ts';
import { until } from '../support/tmux.ts';

const FIXTURE = 'test/fixtures/hung-runner-file.ts';

/** What the hung file held: its temp directory, its child's pid, its own and its `node --test` process's. */
interface Held {
  dir: string;
  childPid: number;
  filePid: number;
  testPid: number;
}

interface Run {
  held: Held | null;
  code: number | null;
  signal: NodeJS.Signals | null;
  output: string;
  /** The TMPDIR the run was given, for its temp directories and its files'. */
  tmp: string;
}

/**
 * Run the fixture through test/run.mjs with `env`; `whenHeld` gets the runner's pid once the file holds its child and
 * directory. Whatever the runner leaves is ended after the test, so that a failing run leaves nothing either.
 */
function runHungFile(t: TestContext, env: Record<string, string>, whenHeld?: (runnerPid: number) => void): Promise<Run> {
  let held: Held | null = null;
  // Registered before the temp directories', so that it runs whatever order after hooks run in.
  t.after(() => {
    if (!held) return;
    for (const pid of [held.testPid, held.filePid, held.childPid]) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
    rmSync(held.dir, { recursive: true, force: true });
  });
  const tmp = tempDir(t);
  const report = join(tempDir(t), 'held.json');
  // The report is written whole, in one write of a few dozen bytes: there once it parses.
  const readHeld = (): Held | null => {
    try {
      held ??= JSON.parse(readFileSync(report, 'utf8'));
    } catch {
      // Not written yet.
    }
    return held;
  };
  // Without this test's own runner context, which would make the run's `node --test` skip its file as a recursive run.
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => name !== 'NODE_TEST_CONTEXT'));
  const runner = spawn(process.execPath, ['test/run.mjs', FIXTURE], {
    cwd: ROOT,
    env: { ...inherited, TMPDIR: tmp, SVC_HUNG_FILE_REPORT: report, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  runner.stdout.on('data', (chunk) => (output += chunk));
  runner.stderr.on('data', (chunk) => (output += chunk));
  const watcher = setInterval(() => {
    if (!readHeld()) return;
    clearInterval(watcher);
    whenHeld?.(runner.pid!);
  }, 50);
  return new Promise((resolve, reject) => {
    runner.on('error', reject);
    runner.on('close', (code, signal) => {
      clearInterval(watcher);
      resolve({ held: readHeld(), code, signal, output, tmp });
    });
  });
}

/** Neither the hung file, nor its child, nor any temp directory of the run is left. */
async function assertNothingLeft(run: Run): Promise<void> {
  const held = run.held!;
  // Killed as the file ended: gone at once, or once the kernel has let it go.
  for (const [pid, what] of [
    [held.childPid, "the file's child"],
    [held.filePid, "the file's own process"],
    [held.testPid, "the file's `node --test` process"],
  ] as const) {
    await until(() => processRuns(pid), (runs) => !runs, `${what} (pid ${pid}) to end`, () => run.output);
  }
  assert.equal(existsSync(held.dir), false, `${held.dir} is still there`);
  assert.deepEqual(readdirSync(run.tmp), [], "the run's temp directories are all removed");
}

test('a file killed at its file timeout leaves no process or temp directory behind', async (t) => {
  // The kill timeout counts from the file's start, so on a loaded machine it can end the file before it holds its
  // child (and there is nothing to check yet): a longer one is tried then. The last failure is the test's.
  const fileTimeoutsMs = [3_000, 15_000, 60_000];
  let run: Run | undefined;
  for (const fileTimeoutMs of fileTimeoutsMs) {
    await t.test(`killed after ${fileTimeoutMs / 1000}s`, async (attempt) => {
      run = await runHungFile(attempt, { SVC_TEST_TIMEOUT_MS: '600000', SVC_TEST_FILE_TIMEOUT_MS: String(fileTimeoutMs) });
      if (!run.held) return;
      assert.equal(run.code, 1, run.output);
      assert.match(run.output, /killed: the file ran longer than/);
      await assertNothingLeft(run);
    });
    if (run?.held) return;
  }
  assert.fail(`the file was killed before it held anything, at every timeout:\n${run?.output}`);
});

test('a file whose process is killed by SIGKILL from outside leaves no process or temp directory behind', async (t) => {
  const run = await runHungFile(t, { SVC_HUNG_FILE_SIGKILLS_PARENT: '1' });
  assert.ok(run.held, run.output);
  assert.equal(run.code, 1, run.output);
  assert.match(run.output, /FAIL test\/fixtures\/hung-runner-file\.ts/);
  await assertNothingLeft(run);
});

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  test(`a run ended by ${signal} passes it on to its files, leaves no process or temp directory behind, and dies by it`, async (t) => {
    const run = await runHungFile(t, {}, (runnerPid) => process.kill(runnerPid, signal));
    assert.ok(run.held, run.output);
    assert.equal(run.signal, signal, run.output);
    await assertNothingLeft(run);
  });
}
