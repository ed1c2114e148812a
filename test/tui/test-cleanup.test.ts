/**
 * Tests that die early leave nothing behind: a test file cut off at its timeout (node:test's `--test-timeout`, whose
 * runner ends the file's process with SIGTERM, skipping the test's `t.after`) or ended by a signal (Ctrl-C on
 * `node test/run.mjs`) still kills the tmux server of test/support/tmux.ts, the `svc serve` of `startServe` and the
 * commands of `runSvc` still running, and removes the directories of `tempDir` (test/support/process-end.ts). One
 * killed by SIGKILL can do none of that: test/run.mjs ends its tmux servers (test/support/tmux-sockets.mjs), and the
 * rest (test/support/file-process.mjs, test/runner/file-process.test.ts).
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import test, { before } from 'node:test';
import { ensureBundle, ROOT, tempDir } from '../support/process.ts';
import { skipWithoutTmux as skip, terminal, tmuxSocketPath, until } from '../support/tmux.ts';
import { endTmuxServer, endTmuxServersNamed, SOCKET_PREFIX_VARIABLE } from '../support/tmux-sockets.mjs';

before(ensureBundle);

interface Held {
  socket: string;
  dir: string;
  serverPid: number;
  /** The data directory of a `runSvc` command that was still waiting when the file ended. */
  commandDir: string;
}

/** The hung file ended before it held everything (cut off while still starting its server and terminal). */
class HeldNothing extends Error {}

/**
 * Run the hung test file with node's `options` (`--test`: under the test runner, as run.mjs does; without, the file's
 * own process); `end` may end it once it holds its terminal. Resolves with what it held and how it ended.
 */
function runHung(options: string[], end?: (pid: number) => void, env: Record<string, string> = {}): Promise<Held & { code: number | null; signal: NodeJS.Signals | null }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', ...options, 'test/fixtures/hung-terminal-test.ts'], {
      cwd: ROOT,
      // Without this test's own runner context, which would make the child skip its file as a recursive run.
      env: { ...Object.fromEntries(Object.entries(process.env).filter(([name]) => name !== 'NODE_TEST_CONTEXT')), ...env },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let output = '';
    let held: Held | null = null;
    child.stdout.on('data', (chunk) => {
      output += chunk;
      const match = /HOLDING (\{.*\})/.exec(output);
      if (match && !held) {
        held = JSON.parse(match[1]!);
        // Only once it holds everything it could leave behind.
        end?.(child.pid!);
      }
    });
    child.on('error', reject);
    child.on('close', (code, signal) => (held ? resolve({ ...held, code, signal }) : reject(new HeldNothing(`the file held nothing:\n${output}`))));
  });
}

const serverRuns = (socket: string) => spawnSync('tmux', ['-L', socket, 'has-session'], { stdio: 'ignore' }).status === 0;

function processRuns(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The processes whose command line names `text` (from /proc: Linux, as tmux's tests are). */
function processesNaming(text: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(text)) pids.push(Number(entry));
    } catch {
      // Ended meanwhile.
    }
  }
  return pids;
}

/** Nothing the hung file held is left. */
async function assertNothingLeft(held: Held): Promise<void> {
  assert.equal(serverRuns(held.socket), false, `tmux server ${held.socket} is still running`);
  assert.equal(existsSync(tmuxSocketPath(held.socket)), false, `tmux's socket file ${tmuxSocketPath(held.socket)} is still there`);
  // Killed (SIGKILL) as the file ended: gone once the kernel has reaped it.
  await until(() => processRuns(held.serverPid), (runs) => !runs, `svc serve (pid ${held.serverPid}) to end`, () => '');
  assert.equal(existsSync(held.dir), false, `${held.dir} is still there`);
  // The command was running on: left, it would go on writing in its directory (recreating it) after the removal.
  await until(() => processesNaming(held.commandDir), (pids) => pids.length === 0, `the svc command on ${held.commandDir} to end`, () => '');
  assert.equal(existsSync(held.commandDir), false, `${held.commandDir} is still there`);
}

test('a test cut off at its timeout leaves no tmux server, svc serve, svc command or temp directory behind', { skip }, async () => {
  // The timeout counts from the file's start, so on a loaded machine it can end the file before its server and
  // terminal are up (and there is nothing to check yet): a longer one is tried then. The last failure is the test's.
  const timeoutsMs = [5_000, 20_000, 60_000];
  let held: Awaited<ReturnType<typeof runHung>> | undefined;
  for (const [i, timeoutMs] of timeoutsMs.entries()) {
    try {
      held = await runHung(['--test', '--test-reporter=tap', `--test-timeout=${timeoutMs}`]);
      break;
    } catch (error) {
      if (!(error instanceof HeldNothing) || i === timeoutsMs.length - 1) throw error;
    }
  }
  assert.ok(held);
  assert.notEqual(held.code, 0, 'the hung test failed');
  await assertNothingLeft(held);
});

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  test(`a test file ended by ${signal} leaves no tmux server, svc serve, svc command or temp directory behind, and dies by the signal`, { skip }, async () => {
    const held = await runHung([], (pid) => process.kill(pid, signal));
    assert.equal(held.signal, signal);
    await assertNothingLeft(held);
  });
}

test('a test that ends leaves no tmux server or socket file behind', { skip }, async (t) => {
  let socket = '';
  await t.test('holding a terminal', async (held) => {
    const term = terminal(held, { columns: 80, rows: 20 });
    term.open(['runs', '--data-dir', tempDir(held)]);
    socket = term.socket;
    assert.ok(serverRuns(socket), 'the terminal runs');
  });
  assert.equal(serverRuns(socket), false, `tmux server ${socket} is still running`);
  assert.equal(existsSync(tmuxSocketPath(socket)), false, `tmux's socket file ${tmuxSocketPath(socket)} is still there`);
});

test('a test file killed by SIGKILL runs none of its cleanups; the runner, seeing its process end, ends its tmux server and removes the socket file', { skip }, async () => {
  // As test/run.mjs runs a file: its terminals' socket names start with what the runner gave it.
  const prefix = `svc-test-cleanup-${process.pid}-`;
  const held = await runHung([], (pid) => process.kill(pid, 'SIGKILL'), { [SOCKET_PREFIX_VARIABLE]: prefix });
  try {
    assert.equal(held.signal, 'SIGKILL');
    assert.ok(held.socket.startsWith(prefix), held.socket);
    assert.ok(serverRuns(held.socket), 'the SIGKILLed file ended its own tmux server: nothing for the runner to do');
    // What test/run.mjs does when a file's process has ended.
    endTmuxServersNamed(prefix);
    assert.equal(serverRuns(held.socket), false, `tmux server ${held.socket} is still running`);
    assert.equal(existsSync(tmuxSocketPath(held.socket)), false, `tmux's socket file ${tmuxSocketPath(held.socket)} is still there`);
  } finally {
    // The rest the file held, which nothing ends after a SIGKILL but this test.
    endTmuxServer(held.socket);
    for (const pid of [held.serverPid, ...processesNaming(held.commandDir)]) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
    for (const dir of [held.dir, held.commandDir]) rmSync(dir, { recursive: true, force: true });
  }
});
