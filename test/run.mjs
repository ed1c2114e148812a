#!/usr/bin/env node
// Runs every test file (test/**/*.test.ts) as its own `node --test` process, several at a time (test files are
// independent: each builds its own app, data directory and ports). Prints each file's result, the full output
// of failing files, and a closing "N passed, N failed" line. Usage: node test/run.mjs [filter-substring ...]; a
// filter that is the path of a file in the repository runs that file, whatever its name (a fixture of a runner test).
// Each file runs in a process group and temp directory of its own, ended and removed with it (test/support/file-process.mjs).
// The selected files are bundled first, in one esbuild build (test/support/test-bundles.mjs), and each process runs
// its file's bundle; SVC_TEST_LOADER=tsx runs the .ts files through tsx's loader instead.
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { startFileProcess } from './support/file-process.mjs';
import { fileTimeouts } from './support/file-timeouts.mjs';
import { bundleTestFiles } from './support/test-bundles.mjs';
import { fileSocketPrefix } from './support/tmux-sockets.mjs';

const root = join(import.meta.dirname, '..');
const filters = process.argv.slice(2);
const cpus = availableParallelism();
// Two more files than CPUs: a file spends part of its time waiting (timers, child processes starting, a browser), and at
// CPUs + 1 the 2-core CI machine was ~1.7 cores busy; at CPUs + 2 the suite took 474 s instead of 557 (.ci/run, 160 files).
const concurrency = Number(process.env.SVC_TEST_CONCURRENCY) || Math.max(2, cpus + 2);
// A file's test timeout and kill timeout, from the load when it starts (test/support/file-timeouts.mjs says why).
const timeoutsFor = () => {
  const load = loadavg()[0];
  return { load, ...fileTimeouts({ load, cpus, env: process.env }) };
};

function findTests(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) {
      if (name !== 'bench' && name !== 'node_modules' && name !== '.build') out.push(...findTests(path));
    } else if (name.endsWith('.test.ts')) out.push(path);
  }
  return out;
}

/** The file of the repository `filter` is the path of, relative to the root, if it is one. */
function namedFile(filter) {
  const path = resolve(filter);
  const file = relative(root, path);
  return !file.startsWith('..') && existsSync(path) && statSync(path).isFile() ? file : null;
}

const named = filters.map(namedFile).filter((file) => file !== null);
const found = findTests(join(root, 'test'))
  .map((file) => relative(root, file))
  .filter((file) => filters.length === 0 || filters.some((f) => file.includes(f)));
const files = [...new Set([...found, ...named])].sort();

const loader = process.env.SVC_TEST_LOADER || 'bundle';
if (loader !== 'bundle' && loader !== 'tsx') {
  console.error(`SVC_TEST_LOADER is ${loader}: it may be bundle or tsx`);
  process.exit(2);
}
const bundled = loader === 'bundle' && files.length > 0 ? await bundleTestFiles(root, files) : null;
// How a file's process loads it: its bundle with the bundle's source map (so a stack names the .ts file's lines), or
// the .ts file through tsx.
const loading = (file) =>
  bundled ? { flags: ['--enable-source-maps'], script: bundled.bundles.get(file) } : { flags: ['--import', 'tsx'], script: file };

// Node parses every certificate NODE_EXTRA_CA_CERTS names at each start, TLS or not (~0.1 s of CPU with the system
// bundle some images name, ~30% of a CLI test file's CPU); the tests reach only loopback, so their processes go without.
const testEnv = { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' };
delete testEnv.NODE_EXTRA_CA_CERTS;

// The run's directory of the files' temp directories (test/support/file-process.mjs), removed when it ends.
const tempRoot = mkdtempSync(join(tmpdir(), 'svc-run-'));
const queue = [...files];
// The files' processes running now, by file, to pass them a signal that ends the run.
const running = new Map();
// The signal the run was ended by, if it was: no file starts after it.
let endedBy = null;

let passed = 0;
let failed = 0;
let skipped = 0;
const failures = [];
const started = Date.now();

async function runFile(file) {
  const t0 = Date.now();
  const timeouts = timeoutsFor();
  const index = files.indexOf(file);
  // A hung file fails at node's --test-timeout (under `node --test <file>`, node 20 counts the file as one test, so the
  // bound is the file's, not each test's: docs/configuration.md) and is killed at timeouts.file if it still hangs, so a
  // run always ends.
  const { flags, script } = loading(file);
  const fileProcess = startFileProcess({
    argv: [process.execPath, ...flags, '--test', '--test-reporter=spec', `--test-timeout=${timeouts.test}`, script],
    cwd: root,
    env: testEnv,
    tempDir: join(tempRoot, String(index)),
    tmuxPrefix: fileSocketPrefix(process.pid, index),
  });
  running.set(file, fileProcess);
  const killer = setTimeout(() => {
    fileProcess.note(`\nkilled: the file ran longer than ${timeouts.file / 1000}s\n`);
    // SIGTERM first, to all the file started: its cleanups (test/support/process-end.ts) stop its tmux servers and svc
    // processes; SIGKILL, which they cannot catch, if it hangs (the runner then ends what they would have).
    fileProcess.end('SIGTERM');
  }, timeouts.file);
  const { output, code } = await fileProcess.ended;
  clearTimeout(killer);
  running.delete(file);
  const count = (label) => Number(new RegExp(`^ℹ ${label} (\\d+)`, 'm').exec(output)?.[1] ?? 0);
  const p = count('pass');
  let f = count('fail') + count('cancelled');
  const s = count('skipped') + count('todo');
  if (code !== 0 && f === 0) f = 1; // crashed before reporting
  passed += p;
  failed += f;
  skipped += s;
  const secs = ((Date.now() - t0) / 1000).toFixed(1);
  const loaded = timeouts.factor > 1 ? `, load ${timeouts.load.toFixed(1)}: timeout ${timeouts.test / 1000}s` : '';
  console.log(`${f ? 'FAIL' : 'ok  '} ${file} (${p} passed, ${f} failed, ${secs}s${loaded})`);
  if (f) failures.push({ file, output });
}

// The files run in process groups of their own, which a Ctrl-C at the terminal (SIGINT to the foreground group) or a
// CI job's SIGTERM to the run does not reach: the run passes it on to each, waits for them to end (their cleanups run,
// then the runner's), and ends by it. A second one kills them at once.
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => {
    const again = endedBy !== null;
    endedBy = signal;
    queue.length = 0;
    for (const fileProcess of running.values()) fileProcess.end(again ? 'SIGKILL' : signal);
  });
}

await Promise.all(
  Array.from({ length: Math.min(concurrency, queue.length) }, async () => {
    while (queue.length) await runFile(queue.shift());
  }),
);

bundled?.remove();
rmSync(tempRoot, { recursive: true, force: true });
if (endedBy) {
  // As it would have without the listeners, so that what started the run (npm, a shell) sees it so.
  process.removeAllListeners(endedBy);
  process.kill(process.pid, endedBy);
} else {
  for (const { file, output } of failures) {
    console.log(`\n===== ${file} =====\n${output}`);
  }
  console.log(`\n${files.length} test files in ${((Date.now() - started) / 1000).toFixed(1)}s`);
  console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
  process.exit(failed > 0 || files.length === 0 ? 1 : 0);
}
