#!/usr/bin/env node
// Bundles svc into dist/svc.mjs (with chunk files beside it, loaded on demand) and, for `svc serve` alone,
// dist/serve.cjs with its code cache, and copies SQLite's WebAssembly binary and the account pages beside them, with
// the template of a new data file.
// Run by `npm run build`; bin/svc runs the result, with no node_modules needed at run time.
import { build } from 'esbuild';
import { spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { codeCacheOf } from './launch.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const require = createRequire(import.meta.url);
mkdirSync(dist, { recursive: true });

// Ink imports react-devtools-core (an optional peer we do not ship) only when DEV=true. Bundled as a module that
// fails the way a missing package does, Ink prints its own "not installed" warning and the TUI runs on.
const noDevtools = {
  name: 'no-react-devtools',
  setup(build) {
    build.onResolve({ filter: /^react-devtools-core$/ }, () => ({ path: 'react-devtools-core', namespace: 'svc-stub' }));
    build.onLoad({ filter: /.*/, namespace: 'svc-stub' }, () => ({
      contents: "const error = new Error('react-devtools-core is not bundled with svc'); error.code = 'ERR_MODULE_NOT_FOUND'; throw error;",
      loader: 'js',
    }));
  },
};

// undici's index evaluates all of undici (fetch, WebSocket, EventSource, caches, cookies, mocks) on import, ~35 ms of
// CPU at every start of svc. svc's bundle gets instead a module with every export undici's index has: the ones the
// server uses from bin/undici-subset.cjs, loaded at once, and the others as getters that load the index on first use
// (the CLI's client calls `fetch`). The export names are read from undici itself, here, so none can go missing.
const undiciSubset = {
  name: 'undici-subset',
  setup(build) {
    build.onResolve({ filter: /^undici$/ }, () => ({ path: 'undici', namespace: 'svc-undici' }));
    build.onLoad({ filter: /.*/, namespace: 'svc-undici' }, () => {
      const names = Object.keys(require('undici'));
      const subset = join(root, 'bin', 'undici-subset.cjs');
      const missing = Object.keys(require(subset)).filter((name) => !names.includes(name));
      if (missing.length > 0) throw new Error(`bin/undici-subset.cjs exports what undici does not: ${missing.join(', ')}`);
      return {
        loader: 'js',
        resolveDir: root,
        contents: [
          `const subset = require(${JSON.stringify(subset)});`,
          'let index = null;',
          `for (const name of ${JSON.stringify(names)}) {`,
          '  if (Object.hasOwn(subset, name)) exports[name] = subset[name];',
          "  else Object.defineProperty(exports, name, { enumerable: true, get: () => (index ??= require('undici/index.js'))[name] });",
          '}',
        ].join('\n'),
      };
    });
  },
};

// fastify's server module and undici's HTTP/2 client require node:http2 when they load (~6 ms of a start); svc never
// speaks HTTP/2. The bundles get a module with http2's exports instead: its constants (undici reads them as it loads)
// copied here from node itself, and every other export a getter that loads node:http2 on first use.
const lazyHttp2 = {
  name: 'lazy-http2',
  setup(build) {
    build.onResolve({ filter: /^(node:)?http2$/ }, (args) =>
      args.namespace === 'svc-http2' ? { path: 'node:http2', external: true } : { path: 'http2', namespace: 'svc-http2' },
    );
    build.onLoad({ filter: /.*/, namespace: 'svc-http2' }, () => {
      const http2 = require('node:http2');
      const names = Object.keys(http2).filter((name) => name !== 'constants');
      return {
        loader: 'js',
        contents: [
          `exports.constants = ${JSON.stringify(http2.constants)};`,
          'let http2 = null;',
          `for (const name of ${JSON.stringify(names)}) {`,
          "  Object.defineProperty(exports, name, { enumerable: true, get: () => (http2 ??= require('node:http2'))[name] });",
          '}',
        ].join('\n'),
      };
    });
  },
};

// CommonJS dependencies bundled into ESM need require/__dirname; node-sqlite3-wasm finds its .wasm via __dirname.
const COMMONJS_IN_ESM = [
  "import { createRequire as __svcCreateRequire } from 'node:module';",
  "import { fileURLToPath as __svcFileURLToPath } from 'node:url';",
  "import { dirname as __svcDirname } from 'node:path';",
  'const require = __svcCreateRequire(import.meta.url);',
  'const __filename = __svcFileURLToPath(import.meta.url);',
  'const __dirname = __svcDirname(__filename);',
].join('\n');

// Options both bundles share. Whitespace and syntax are minified (a smaller bundle parses faster at every start, and
// with the comments gone the output is pure ASCII, which V8 keeps as a one-byte string: half the memory of the
// two-byte string a single curly quote in a comment forces); identifiers are kept, and with the linked source map,
// profiles and stack traces stay readable.
const shared = {
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  sourcemap: 'linked',
  minifyWhitespace: true,
  minifySyntax: true,
  legalComments: 'none',
  logLevel: 'warning',
  // Applied to every output file, each chunk included: every chunk is its own module scope, so each declares its own.
  banner: { js: COMMONJS_IN_ESM },
};

// Code splitting: dist/svc.mjs holds what every command needs, and what only some commands load through import()
// (the runs TUI with ink and react, the interactive prompts) lives in chunk files beside it, so `svc serve` never
// parses them. The chunks sit in dist/ itself: code that finds files through import.meta.url (the account pages,
// SQLite's .wasm through __dirname) resolves the same from any of them.
const CHUNK_PREFIX = 'svc-';
removeStaleChunks();
await build({
  ...shared,
  entryPoints: { svc: join(root, 'cli/index.ts') },
  outdir: dist,
  splitting: true,
  chunkNames: `${CHUNK_PREFIX}[name]-[hash]`,
  outExtension: { '.js': '.mjs' },
  define: { __SVC_VERSION__: JSON.stringify(pkg.version) },
  jsx: 'automatic',
  plugins: [noDevtools, undiciSubset, lazyHttp2],
});

// `svc serve` runs from a bundle of its own, in CommonJS, with a code cache (bin/launch.mjs): cli/serve-entry.ts, one
// file. The code that finds files beside it through import.meta.url gets the bundle's own URL.
const serveBundle = join(dist, 'serve.cjs');
rmSync(codeCacheOf(serveBundle), { force: true });
await build({
  ...shared,
  format: 'cjs',
  entryPoints: [join(root, 'cli/serve-entry.ts')],
  outfile: serveBundle,
  define: { __SVC_VERSION__: JSON.stringify(pkg.version), 'import.meta.url': '__svcImportMetaUrl' },
  banner: { js: "const __svcImportMetaUrl = require('node:url').pathToFileURL(__filename).href;" },
  plugins: [undiciSubset, lazyHttp2],
});

copyFileSync(
  join(dirname(require.resolve('node-sqlite3-wasm')), 'node-sqlite3-wasm.wasm'),
  join(dist, 'node-sqlite3-wasm.wasm'),
);
// A new data file starts as a copy of the file the migrations produce (src/store/template.ts), made here by running
// them.
await writeSchemaTemplate();
// The tokenizer's BPE ranks as data: src/gateway/tokens.ts reads them on its first count, instead of every start of
// svc parsing them as a 2.3 MB JavaScript module.
writeFileSync(join(dist, 'o200k_base.json'), JSON.stringify(require('js-tiktoken/ranks/o200k_base')));
// The account pages (/login, /accept-invite, ...): src/http/pages.ts serves them from dist/pages/ beside the bundle.
rmSync(join(dist, 'pages'), { recursive: true, force: true });
cpSync(join(root, 'dashboard', 'pages'), join(dist, 'pages'), { recursive: true });
// Last: it starts `svc serve`, which needs everything above.
makeCodeCache();
await buildClientPackage();
console.log('built dist/svc.mjs with its chunks, dist/serve.cjs with its code cache, and the client package (dist/client.mjs, dist/client/*.d.ts)');

/**
 * The reference client (src/client/, SPEC 4.20) as the package's `svc/client` export: one ESM bundle with its two
 * dependencies inside (undici, eventsource-parser), so it runs without node_modules, and declaration files emitted by
 * TypeScript from the same source, with the `.ts` import specifiers of the source rewritten to `.js`, which is how a
 * consumer's TypeScript finds the `.d.ts` files beside them.
 */
async function buildClientPackage() {
  await build({
    ...shared,
    entryPoints: [join(root, 'src/client/index.ts')],
    outfile: join(dist, 'client.mjs'),
    // fastify appears only as a type (the in-process transport); nothing of it is bundled.
    external: ['fastify'],
  });
  const ts = (await import('typescript')).default;
  const typesDir = join(dist, 'client');
  rmSync(typesDir, { recursive: true, force: true });
  const program = ts.createProgram([join(root, 'src/client/index.ts')], {
    declaration: true,
    emitDeclarationOnly: true,
    rewriteRelativeImportExtensions: true,
    allowImportingTsExtensions: true,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    strict: true,
    skipLibCheck: true,
    types: ['node'],
    rootDir: join(root, 'src/client'),
    outDir: typesDir,
  });
  const written = [];
  const { diagnostics } = program.emit(undefined, (file, text) => {
    // Only the client's own files (the program also sees what they import).
    if (!file.startsWith(typesDir)) return;
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, text.replace(/(from\s+['"]\.{1,2}\/[^'"]+)\.ts(['"])/g, '$1.js$2'));
    written.push(file);
  });
  if (diagnostics.length > 0 || written.length === 0) {
    throw new Error(`client declarations failed: ${ts.formatDiagnostics(diagnostics, { getCanonicalFileName: (f) => f, getCurrentDirectory: () => root, getNewLine: () => '\n' })}`);
  }
}

/**
 * Runs src/store/write-template.ts, bundled for the occasion into a script in dist/ (its packages stay imports, found
 * in node_modules), which writes the template of the current migrations into dist/ and removes older ones.
 */
async function writeSchemaTemplate() {
  const script = join(dist, '.write-template.mjs');
  await build({
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    logLevel: 'warning',
    stdin: {
      contents: `import { writeTemplate } from './src/store/write-template.ts';\nawait writeTemplate(${JSON.stringify(dist)});`,
      resolveDir: root,
      loader: 'ts',
    },
    outfile: script,
  });
  try {
    await import(pathToFileURL(script).href);
  } finally {
    rmSync(script, { force: true });
  }
}

/**
 * dist/serve.cjs.cache, by bin/make-code-cache.mjs in a process of its own (a code cache holds what one start-up
 * compiled), on an empty data directory and with svc's variables cleared from its environment.
 */
function makeCodeCache() {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-code-cache-'));
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('SVC_') && name !== 'NODE_OPTIONS'));
  try {
    const made = spawnSync(process.execPath, [join(root, 'bin', 'make-code-cache.mjs'), serveBundle, dataDir], {
      env,
      stdio: ['ignore', 'ignore', 'inherit'],
      timeout: 60_000,
    });
    if (made.status !== 0 || !existsSync(codeCacheOf(serveBundle))) {
      throw new Error(`making dist/serve.cjs.cache failed (exit ${made.status ?? made.signal ?? made.error?.message})`);
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** Chunk names carry a content hash: without this, every build would leave the previous build's chunks behind. */
function removeStaleChunks() {
  for (const name of readdirSync(dist)) {
    if (name.startsWith(CHUNK_PREFIX)) rmSync(join(dist, name), { force: true });
  }
}
