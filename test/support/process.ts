/** Spawning the bundled executable (`bin/svc`) in tests: one-shot commands and a `svc serve` that is killed after. */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { after } from 'node:test';
import { fileURLToPath } from 'node:url';
import { loadScaled } from './load-scaled.ts';
import { onProcessEnd } from './process-end.ts';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const SVC = join(ROOT, 'bin', 'svc');

/** `npm test` builds first; a file run alone builds the bundles when one is missing. */
export async function ensureBundle(): Promise<void> {
  if (existsSync(join(ROOT, 'dist', 'svc.cjs')) && existsSync(join(ROOT, 'dist', 'serve.cjs'))) return;
  await runSvc([], { script: join(ROOT, 'bin', 'build.mjs') });
}

/**
 * The environment for executing `bin/svc` itself, as a user starts it: its first line is sh's `exec node`, so this
 * process's node goes first on PATH.
 */
export function executedSvcEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return { ...process.env, PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}`, ...extra };
}

let tasksetFound: boolean | undefined;

/** Whether util-linux's `taskset` can be run here (it pins a process to CPUs). */
export function hasTaskset(): boolean {
  tasksetFound ??= spawnSync('taskset', ['--version']).status === 0;
  return tasksetFound;
}

/** The command line that runs `argv` on the CPUs `cpus` names (taskset execs it: one pid), or as is without `cpus`. */
export function onCpus(argv: readonly string[], cpus?: string): [string, ...string[]] {
  return cpus === undefined ? [argv[0]!, ...argv.slice(1)] : ['taskset', '-c', cpus, ...argv];
}

/** What tempDir and startServe need of a test's context: somewhere to leave their cleanup (a TestContext is one). */
export interface Cleanups {
  after(fn: () => unknown): void;
}

/**
 * Cleanups for a describe block, when its tests share a data directory or a server: call it in the block's body, and
 * what is left with it runs after the block's last test (last left, first run).
 */
export function suiteCleanups(): Cleanups {
  const left: Array<() => unknown> = [];
  after(async () => {
    for (const fn of left.reverse()) await fn();
  });
  return { after: (fn) => void left.push(fn) };
}

export function tempDir(t: Cleanups, prefix = 'svc-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const remove = () => rmSync(dir, { recursive: true, force: true });
  // Also when the test never reaches its after hooks (a timeout, a signal).
  const forget = onProcessEnd(remove);
  t.after(() => {
    forget();
    remove();
  });
  return dir;
}

/**
 * Whether process `pid` runs: a zombie (ended, not yet reaped) does not, as an orphan's may stay one where pid 1 reaps
 * none (some containers' init). Linux's /proc, as the tests that need it are.
 */
export function processRuns(pid: number): boolean {
  try {
    // The state follows the command's name in parentheses, which may itself hold any character.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

/** A TCP port free now on 127.0.0.1 (its listener is closed again), or an error if it cannot be bound. */
export function listenOnce(port = 0): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      const bound = (server.address() as AddressInfo).port;
      server.close(() => resolve(bound));
    });
  });
}

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function runSvc(args: string[], options: { env?: Record<string, string>; input?: string; script?: string; cwd?: string } = {}): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [options.script ?? SVC, ...args], {
      cwd: options.cwd ?? ROOT,
      env: { ...process.env, SVC_LOG_LEVEL: 'silent', ...options.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    // A command still running when the test process ends (a timeout, a signal) would outlive it and go on writing in
    // a data directory tempDir has removed, creating it again.
    const forget = onProcessEnd(() => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('error', (error) => {
      forget();
      reject(error);
    });
    child.on('close', (code) => {
      forget();
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(options.input ?? '');
  });
}

export interface ServeProcess {
  child: ChildProcess;
  address: string;
  output(): string;
  /** Resolves with the exit code. */
  exited: Promise<number | null>;
}

/** How long startServe waits for the address line on a quiet machine; up to 4 times that under load (loadScaled). */
const SERVE_START_TIMEOUT_MS = 60_000;

/**
 * Start `svc serve --port 0` on `dataDir` and wait for its address line; killed after the test. With SVC_PORT in
 * `env` it listens on that port instead (a server restarted where its clients look for it). `shellFirst`: a sh
 * command run first in the same process, which then execs svc (it keeps the pid the command saw as `$$`).
 */
export function startServe(t: Cleanups, dataDir: string, env: Record<string, string> = {}, shellFirst?: string): Promise<ServeProcess> {
  const argv = [SVC, 'serve', ...(env.SVC_PORT === undefined ? ['--port', '0'] : []), '--data-dir', dataDir];
  const [command, args] = shellFirst === undefined ? [process.execPath, argv] : ['sh', ['-c', `${shellFirst}; exec "$0" "$@"`, process.execPath, ...argv]];
  const child = spawn(command, args, {
    cwd: ROOT,
    env: { ...process.env, SVC_LOG_LEVEL: 'silent', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const kill = () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  };
  // Also when the test never reaches its after hooks (a timeout, a signal): the server would outlive the process.
  const forget = onProcessEnd(kill);
  t.after(() => {
    forget();
    kill();
  });
  return new Promise((resolve, reject) => {
    // A start takes ~0.2 s on a quiet machine, and took past 20 s once with the whole suite at a load average of
    // 25-60 on 2 cores. A hung start still fails well inside the file's test timeout (test/support/file-timeouts.mjs).
    const timer = setTimeout(() => reject(new Error(`svc serve did not start: ${output}`)), loadScaled(SERVE_START_TIMEOUT_MS));
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /svc listening on (http:\/\/\S+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve({ child, address: match[1]!, output: () => output, exited });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`svc serve exited with ${code}: ${output}`));
    });
  });
}
