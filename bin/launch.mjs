// How bin/svc starts a bundle; bin/make-code-cache.mjs (run by `npm run build`) starts them the same way.
//
// `svc serve` runs from a bundle of its own, dist/serve.cjs (cli/serve-entry.ts), every other command from
// dist/svc.cjs (cli/index.ts), both in CommonJS: V8 can then compile them from a code cache (dist/serve.cjs.cache,
// dist/svc.cjs.cache), the build's record of the functions a start-up compiled. ES modules have no such cache on
// Node 20 (module.enableCompileCache came with Node 22), and compiling a bundle's ~3 MB and then each function on its
// first call is a third of the CPU a server's start costs, and a quarter of a command's. The cache is V8's, of the
// Node that ran the build: under another Node version V8 declines it and compiles the bundle as it would without.
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { Script } from 'node:vm';
import { setFlagsFromString } from 'node:v8';

/**
 * V8 flags svc runs with, set before any bundle compiles (and before a code cache is made or used: V8 accepts a
 * cache only under the flags it was made with).
 */
export function setEngineFlags() {
  // SQLite's WebAssembly is compiled when the bundle loads. By default V8 then re-optimises every function of it on
  // background threads during start-up (~120 ms of CPU and ~30 MB of RSS on this machine); with a large tiering budget
  // only the functions that run hot under load are optimised. Same SQLite throughput measured either way.
  setFlagsFromString('--wasm-tiering-budget=180000000');
  // After each full GC V8 lets the old generation grow to up to ~4x what survived (plus the young generation's
  // size) before the next one; under load svc's ~25 MB of live heap then sat in 100-130 MB of old generation, most
  // of it dead. 1.5x: ~35 MB less RSS at the end of the bench's soak; the extra mark-compacts (~10 ms each over the
  // small live heap) did not show in the CPU per request (docs/performance-notes.md, "Where the RSS goes").
  setFlagsFromString('--heap-growing-percent=50');
  // No allocation-site pretenuring: when V8 sees many objects of one allocation site survive a few scavenges, it
  // allocates that site's objects in the old generation from then on. The ledger's per-window arrays met that now and
  // then (a window straddling scavenges), and from then on every window's array was born old and, once dead, kept the
  // window's young records alive through the scavenges: ~0.9 KB promoted per request in those processes instead of
  // ~25 bytes (docs/performance-notes.md, "Allocation-site pretenuring").
  setFlagsFromString('--no-allocation-site-pretenuring');
  // A regular expression that backtracks more than 50,000 times goes on in V8's linear-time engine instead of for
  // hours: the patterns of the tool schemas clients declare are compiled for it (src/gateway/tool-schemas.ts).
  setFlagsFromString('--enable-experimental-regexp-engine-on-excessive-backtracks');
}

export const codeCacheOf = (bundle) => `${bundle}.cache`;

/**
 * V8 checks a code cache against the length of the source only, and code compiled from it keeps the file name it was
 * compiled under (stack traces would name it). So the cache file starts with a SHA-256 of the bundle's path and
 * source: a cache left from another build, or made where the bundle was before it moved, is not used (the bundle
 * then compiles as usual).
 */
const HASH_BYTES = 32;
const hashOf = (bundle, source) => createHash('sha256').update(bundle).update('\0').update(source).digest();

/** The code cache of `bundle` if it was made from this very bundle (`source` its content) where it is now. */
export function readCodeCache(bundle, source) {
  let file;
  try {
    file = readFileSync(codeCacheOf(bundle));
  } catch {
    return undefined;
  }
  return file.length > HASH_BYTES && file.subarray(0, HASH_BYTES).equals(hashOf(bundle, source)) ? file.subarray(HASH_BYTES) : undefined;
}

/** Record what `script` has compiled so far as the code cache of `bundle`. */
export function writeCodeCache(bundle, { script, source }) {
  writeFileSync(codeCacheOf(bundle), Buffer.concat([hashOf(bundle, source), script.createCachedData()]));
}

/**
 * Run a CommonJS bundle with what Node's loader gives a module (`exports`, `module`, a `require` resolving from the
 * bundle, its `__filename` and `__dirname`), compiled from its code cache when it has one. Returns what
 * writeCodeCache needs.
 */
export function runCommonJsBundle(bundle) {
  const source = readFileSync(bundle);
  const script = new Script(`(function (exports, require, module, __filename, __dirname) { ${source.toString('utf8')}\n})`, {
    filename: bundle,
    cachedData: readCodeCache(bundle, source),
  });
  const module = { exports: {} };
  script.runInThisContext()(module.exports, createRequire(bundle), module, bundle, dirname(bundle));
  return { script, source };
}
