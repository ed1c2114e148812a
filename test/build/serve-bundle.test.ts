/**
 * `svc serve` runs from dist/serve.cjs, every other command from dist/svc.cjs, each with its code cache
 * (bin/launch.mjs): the cache the build made is one V8 takes, a cache of another bundle is never used, one V8 declines
 * (another Node, other flags) costs only the compile, and the serve entry parses its command line as the full program
 * does.
 * Executed, bin/svc sets glibc's malloc thresholds for node, unless the environment chose its own, and on one CPU
 * runs V8's garbage collector on the main thread alone.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import test from 'node:test';
import { runSvcInProcess } from '../support/in-process-cli.ts';
import { ensureBundle, executedSvcEnv, hasTaskset, onCpus, ROOT, runSvc, SVC, tempDir } from '../support/process.ts';

interface Launch {
  runCommonJsBundle(bundle: string): { script: { cachedDataRejected?: boolean } };
  writeCodeCache(bundle: string, compiled: unknown): void;
  codeCacheOf(bundle: string): string;
}
const launch = (await import(join(ROOT, 'bin', 'launch.mjs'))) as Launch;

test("the build's code cache of dist/serve.cjs is its own and accepted under svc's engine flags", async () => {
  await ensureBundle();
  // In a process of its own: the flags must be set before anything compiles, as bin/svc does.
  const probe = `
    import { readFileSync } from 'node:fs';
    import { Script } from 'node:vm';
    import { readCodeCache, setEngineFlags } from ${JSON.stringify(join(ROOT, 'bin', 'launch.mjs'))};
    setEngineFlags();
    const bundle = ${JSON.stringify(join(ROOT, 'dist', 'serve.cjs'))};
    const cachedData = readCodeCache(bundle, readFileSync(bundle));
    const source = '(function (exports, require, module, __filename, __dirname) { ' + readFileSync(bundle, 'utf8') + '\\n})';
    process.stdout.write(String(new Script(source, { filename: bundle, cachedData }).cachedDataRejected));
  `;
  const result = spawnSync(process.execPath, ['--input-type=module', '-e', probe], { encoding: 'utf8' });
  assert.equal(result.stderr, '');
  assert.equal(result.stdout, 'false');
});

test("the commands' bundle, dist/svc.cjs, runs from the build's code cache as bin/svc starts it", async () => {
  await ensureBundle();
  // runCommonJsBundle returns once the bundle's top level ran; the command itself answers on a later tick.
  const probe = `
    import { runCommonJsBundle, setEngineFlags } from ${JSON.stringify(join(ROOT, 'bin', 'launch.mjs'))};
    setEngineFlags();
    process.argv = [process.argv[0], 'svc', '--version'];
    const { script } = runCommonJsBundle(${JSON.stringify(join(ROOT, 'dist', 'svc.cjs'))});
    process.stderr.write('cachedDataRejected=' + script.cachedDataRejected);
  `;
  const result = spawnSync(process.execPath, ['--input-type=module', '-e', probe], { encoding: 'utf8' });
  assert.equal(result.stderr, 'cachedDataRejected=false');
  assert.equal(result.stdout, `${JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version}\n`);
  assert.equal(result.status, 0);
});

test('svc --version and --help load neither the server, the in-process store nor the client, nor the Node built-ins they require', async () => {
  await ensureBundle();
  // Node lists every built-in module a process has loaded; the commands load the rest only when they connect.
  const probe = (args: string[]) => `
    import { runCommonJsBundle, setEngineFlags } from ${JSON.stringify(join(ROOT, 'bin', 'launch.mjs'))};
    setEngineFlags();
    process.argv = [process.argv[0], 'svc', ...${JSON.stringify(args)}];
    process.on('exit', () => process.stderr.write(process.moduleLoadList.join('\\n')));
    runCommonJsBundle(${JSON.stringify(join(ROOT, 'dist', 'svc.cjs'))});
  `;
  for (const args of [['--version'], ['--help'], ['keys', 'mode', 'key_x', 'sideways']]) {
    const result = spawnSync(process.execPath, ['--input-type=module', '-e', probe(args)], { encoding: 'utf8' });
    const loaded = result.stderr.split('\n').filter((line) => line.startsWith('NativeModule ')).map((line) => line.slice('NativeModule '.length));
    assert.ok(loaded.includes('child_process'), `${args.join(' ')}: the probe sees commander's built-ins`);
    for (const unused of ['http', 'https', 'tls', 'assert', 'dns', 'perf_hooks']) assert.ok(!loaded.includes(unused), `${args.join(' ')} loaded ${unused}`);
  }
});

test('a code cache V8 declines (made under other engine flags, as by another Node) leaves the bundle compiled as usual', (t) => {
  const dir = tempDir(t);
  const bundle = join(dir, 'b.cjs');
  writeFileSync(bundle, "process.stdout.write('ran');");
  const run = (flags: string[]) => {
    const script = `
      const { runCommonJsBundle, writeCodeCache } = await import(${JSON.stringify(join(ROOT, 'bin', 'launch.mjs'))});
      const compiled = runCommonJsBundle(${JSON.stringify(bundle)});
      process.stderr.write(String(compiled.script.cachedDataRejected));
      if (process.argv.includes('write')) writeCodeCache(${JSON.stringify(bundle)}, compiled);
    `;
    return spawnSync(process.execPath, [...flags, '--input-type=module', '-e', script, ...(flags.length === 0 ? ['write'] : [])], { encoding: 'utf8' });
  };
  assert.equal(run([]).stderr, 'undefined', 'no cache yet: one is made');
  const taken = run([]);
  assert.deepEqual([taken.stdout, taken.stderr], ['ran', 'false'], 'taken under the same flags');
  const declined = run(['--no-lazy-feedback-allocation']);
  assert.deepEqual([declined.stdout, declined.stderr, declined.status], ['ran', 'true', 0]);
});

test('a code cache is used only with the bundle it was made from', (t) => {
  const dir = tempDir(t);
  const bundle = join(dir, 'b.cjs');
  writeFileSync(bundle, 'module.exports.answer = function answer() { return 41 + 1; };');
  launch.writeCodeCache(bundle, launch.runCommonJsBundle(bundle));
  assert.equal(launch.runCommonJsBundle(bundle).script.cachedDataRejected, false, 'used');
  // Same length, other code: V8 alone would take the cache (it checks the length), the hash in front of it does not.
  writeFileSync(bundle, 'module.exports.answer = function answer() { return 40 + 2; };');
  assert.equal(launch.runCommonJsBundle(bundle).script.cachedDataRejected, undefined, 'not offered to V8');
  // The same bundle and cache elsewhere: code from the cache would carry the old path in its stack traces.
  launch.writeCodeCache(bundle, launch.runCommonJsBundle(bundle));
  const moved = join(dir, 'moved.cjs');
  copyFileSync(bundle, moved);
  copyFileSync(launch.codeCacheOf(bundle), launch.codeCacheOf(moved));
  assert.equal(launch.runCommonJsBundle(moved).script.cachedDataRejected, undefined, 'not where it was made');
  writeFileSync(launch.codeCacheOf(bundle), 'short');
  assert.equal(launch.runCommonJsBundle(bundle).script.cachedDataRejected, undefined, 'a damaged cache is not offered either');
});

test('the serve entry answers help and usage errors as the full program does', async () => {
  await ensureBundle();
  for (const args of [['serve'], ['serve', '--help'], ['serve', '--version'], ['serve', '--bogus'], ['serve', '--port', 'x'], ['serve', 'extra']]) {
    // bin/svc routes `serve` to dist/serve.cjs; the full program (dist/svc.cjs's source) answers in-process.
    // An unusable SVC_PORT: should a command line get as far as starting, it stops at the configuration.
    const env = { SVC_PORT: 'not a port' };
    const [viaServeEntry, viaFullProgram] = await Promise.all([runSvc(args, { env }), runSvcInProcess(args, { env })]);
    assert.deepEqual(viaServeEntry, viaFullProgram, args.join(' '));
  }
});

test('bin/svc runs dist/serve.cjs for serve after the data directory\'s option too, and dist/svc.cjs for every other command', async (t) => {
  await ensureBundle();
  // A checkout whose dist holds the serve bundle alone: a command line routed to the other bundle says it is missing.
  const root = tempDir(t);
  mkdirSync(join(root, 'bin'));
  mkdirSync(join(root, 'dist'));
  for (const file of ['package.json', 'bin/svc', 'bin/launch.mjs', 'dist/serve.cjs']) copyFileSync(join(ROOT, file), join(root, file));
  const svc = join(root, 'bin', 'svc');
  const dataDir = tempDir(t);
  for (const args of [['serve'], ['-d', dataDir, 'serve'], [`-d${dataDir}`, 'serve'], ['--data-dir', dataDir, 'serve'], [`--data-dir=${dataDir}`, 'serve']]) {
    const result = await runSvc([...args, '--help'], { script: svc });
    assert.equal(result.code, 0, `${args.join(' ')}: ${result.stderr}`);
    assert.match(result.stdout, /^Usage: svc serve/, args.join(' '));
  }
  for (const args of [['keys', 'list'], ['-d', dataDir, 'keys', 'list'], ['--url', 'http://127.0.0.1:1', 'serve'], ['-d=x', 'serve']]) {
    const result = await runSvc(args, { script: svc });
    assert.equal(result.code, 1, args.join(' '));
    assert.match(result.stderr, /dist\/svc\.cjs is missing/, args.join(' '));
  }
});

/**
 * `bin/svc serve` executed as a user runs it (its first line is sh's), on the CPUs `cpus` names (taskset) or on all;
 * the environment and the command line node got, read from /proc.
 */
async function environmentOfExecutedServer(t: import('node:test').TestContext, extra: Record<string, string>, cpus?: string) {
  const argv = [SVC, 'serve', '--port', '0', '--data-dir', tempDir(t), '--log-level', 'silent'];
  const [command, ...args] = onCpus(argv, cpus);
  const child = spawn(command, args, { env: executedSvcEnv({ SVC_API_KEY: '', ...extra }), stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  t.after(async () => {
    child.kill('SIGTERM');
    await exited;
  });
  await new Promise<void>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
      if (out.includes('svc listening on')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`bin/svc serve exited with ${code}`)));
  });
  const environ = readFileSync(`/proc/${child.pid}/environ`, 'utf8').split('\0');
  return {
    exe: readlinkSync(`/proc/${child.pid}/exe`),
    nodeArgs: readFileSync(`/proc/${child.pid}/cmdline`, 'utf8').split('\0').slice(1, -1),
    value: (name: string) => environ.find((entry) => entry.startsWith(`${name}=`))?.slice(name.length + 1),
  };
}

test('executed, bin/svc gives node fixed malloc thresholds in the same process, and keeps thresholds the environment set', { skip: process.platform !== 'linux' }, async (t) => {
  await ensureBundle();
  const defaults = await environmentOfExecutedServer(t, {});
  assert.equal(defaults.exe, process.execPath, 'sh execs node: the pid that was spawned is the server');
  assert.equal(defaults.value('MALLOC_MMAP_THRESHOLD_'), '131072');
  assert.equal(defaults.value('MALLOC_TRIM_THRESHOLD_'), '131072');
  const chosen = await environmentOfExecutedServer(t, { MALLOC_MMAP_THRESHOLD_: '65536', MALLOC_TRIM_THRESHOLD_: '1048576' });
  assert.equal(chosen.value('MALLOC_MMAP_THRESHOLD_'), '65536');
  assert.equal(chosen.value('MALLOC_TRIM_THRESHOLD_'), '1048576');
});

test('executed on one CPU, bin/svc runs node with a single-threaded garbage collector; on several, with V8\'s helper threads', { skip: process.platform !== 'linux' || !hasTaskset() }, async (t) => {
  await ensureBundle();
  const single = ['--single-threaded-gc', SVC, 'serve'];
  const pinned = await environmentOfExecutedServer(t, {}, '0');
  assert.equal(pinned.exe, process.execPath);
  assert.deepEqual(pinned.nodeArgs.slice(0, 3), single);
  if (availableParallelism() === 1) return; // the rest needs a second CPU
  const everywhere = await environmentOfExecutedServer(t, {});
  assert.deepEqual(everywhere.nodeArgs.slice(0, 2), [SVC, 'serve']);
  // nproc would count OMP_NUM_THREADS (an OpenMP setting many machines carry) as the CPUs there are: bin/svc does not.
  const openMp = await environmentOfExecutedServer(t, { OMP_NUM_THREADS: '1', OMP_THREAD_LIMIT: '1' });
  assert.deepEqual(openMp.nodeArgs.slice(0, 2), [SVC, 'serve']);
});
