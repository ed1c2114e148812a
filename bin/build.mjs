#!/usr/bin/env node
// Bundles svc into dist/svc.cjs (every command but `svc serve`, which has dist/serve.cjs), each with its V8 code
// cache, and the runs TUI into dist/tui.mjs, and copies SQLite's WebAssembly binary and the account pages beside them, with
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
// (none of svc's code does: the client sends through `request` too). The export names are read from undici itself, here, so none can go missing.
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

// dist/svc.cjs gets, for cli/tui/start-tui.tsx, a module that loads dist/tui.mjs on first use; esbuild would
// otherwise bundle the TUI into it. The TUI takes its connection as arguments: its copies of the small terminal
// helpers it shares with the CLI hold no state. The import() is in a file of its own, dist/load-tui.cjs, which Node
// loads itself: in code compiled by node:vm, as bin/launch.mjs compiles the bundle, import() needs a loader of the vm
// module's (experimental on Node 20, with a warning on stderr), and code compiled from a code cache lost it anyway.
const TUI_BUNDLE = 'tui.mjs';
const TUI_LOADER = 'load-tui.cjs';
const runsTuiOutside = {
  name: 'runs-tui-outside',
  setup(build) {
    build.onResolve({ filter: /\/tui\/start-tui\.tsx$/ }, () => ({ path: 'start-tui', namespace: 'svc-tui' }));
    build.onResolve({ filter: /^\.\/load-tui\.cjs$/ }, (args) => ({ path: args.path, external: true }));
    build.onLoad({ filter: /.*/, namespace: 'svc-tui' }, () => ({
      loader: 'js',
      contents: `exports.startRunsTui = async (...args) => (await require('./${TUI_LOADER}')()).startRunsTui(...args);`,
    }));
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

// Options every bundle shares. Whitespace and syntax are minified (a smaller bundle parses faster at every start, and
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
  banner: { js: COMMONJS_IN_ESM },
};

// Every command runs from a CommonJS bundle compiled from its V8 code cache (bin/launch.mjs): `svc serve` from
// dist/serve.cjs (cli/serve-entry.ts, only what serving needs), every other command from dist/svc.cjs (cli/index.ts).
// The code that finds files beside them through import.meta.url (the account pages, SQLite's .wasm) gets the
// bundle's own URL. What only some commands need stays unevaluated until they call for it: the prompts, the server,
// the in-process app and store, the client (esbuild wraps a dynamically imported module in a function run on first
// import), and the runs TUI, which is not in the bundle at all (next).
const cjs = {
  ...shared,
  format: 'cjs',
  define: { __SVC_VERSION__: JSON.stringify(pkg.version), 'import.meta.url': '__svcImportMetaUrl' },
  banner: { js: "const __svcImportMetaUrl = require('node:url').pathToFileURL(__filename).href;" },
};
const cliBundle = join(dist, 'svc.cjs');
const serveBundle = join(dist, 'serve.cjs');
removeStaleOutput();
await build({ ...cjs, entryPoints: [join(root, 'cli/index.ts')], outfile: cliBundle, plugins: [runsTuiOutside, undiciSubset, lazyHttp2] });
await build({ ...cjs, entryPoints: [join(root, 'cli/serve-entry.ts')], outfile: serveBundle, plugins: [undiciSubset, lazyHttp2] });
// The runs TUI (Ink, React, Yoga) as an ES module of its own: Ink awaits at its top level, which CommonJS cannot.
await build({
  ...shared,
  entryPoints: [join(root, 'cli/tui/start-tui.tsx')],
  outfile: join(dist, TUI_BUNDLE),
  jsx: 'automatic',
  plugins: [noDevtools],
});
writeFileSync(join(dist, TUI_LOADER), `// Written by bin/build.mjs: dist/svc.cjs loads the runs TUI through it.\nmodule.exports = () => import('./${TUI_BUNDLE}');\n`);

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
makeCodeCaches();
await buildClientPackage();
console.log('built dist/svc.cjs and dist/serve.cjs with their code caches, dist/tui.mjs, and the client package (dist/client.mjs, dist/client/*.d.ts)');

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
    // src/, not src/client/: the client imports src/core/'s primitives (src/core/terminal-escapes.ts), and a root that
    // does not hold every source file is an error of the program's options, which emit() does not report.
    rootDir: join(root, 'src'),
    outDir: dist,
  });
  const written = [];
  const { diagnostics } = program.emit(undefined, (file, text) => {
    // Only the client's own files (the program also sees what they import): what it uses of src/core/ is inside the
    // bundle and named in none of its declarations.
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
 * The code caches of dist/serve.cjs and dist/svc.cjs, each by bin/make-code-cache.mjs in a process of its own (a code
 * cache holds what one start-up compiled), on an empty data directory and with svc's variables cleared from its
 * environment.
 */
function makeCodeCaches() {
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('SVC_') && name !== 'NODE_OPTIONS'));
  for (const bundle of [serveBundle, cliBundle]) {
    const dataDir = mkdtempSync(join(tmpdir(), 'svc-code-cache-'));
    try {
      const made = spawnSync(process.execPath, [join(root, 'bin', 'make-code-cache.mjs'), bundle, dataDir], {
        env,
        stdio: ['ignore', 'ignore', 'inherit'],
        timeout: 60_000,
      });
      if (made.status !== 0 || !existsSync(codeCacheOf(bundle))) {
        throw new Error(`making ${codeCacheOf(bundle)} failed (exit ${made.status ?? made.signal ?? made.error?.message})`);
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }
}

/**
 * Before a build: the code caches (a failed build must not leave one of an older bundle beside a new one; the hash
 * in front of each would refuse it anyway), and what older builds made that this one does not (dist/svc.mjs and its
 * chunk files, until the thirty-fourth session).
 */
function removeStaleOutput() {
  for (const name of readdirSync(dist)) {
    if (name.endsWith('.cjs.cache') || name.startsWith('svc.mjs') || name.startsWith('svc-')) rmSync(join(dist, name), { force: true });
  }
}
