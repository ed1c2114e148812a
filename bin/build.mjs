#!/usr/bin/env node
// Bundles svc into dist/svc.mjs (one file) and copies SQLite's WebAssembly binary and the account pages beside it.
// Run by `npm run build`; bin/svc runs the result, with no node_modules needed at run time.
import { build } from 'esbuild';
import { copyFileSync, cpSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

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

await build({
  entryPoints: [join(root, 'cli/index.ts')],
  outfile: join(dist, 'svc.mjs'),
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  sourcemap: 'linked',
  legalComments: 'none',
  logLevel: 'warning',
  define: { __SVC_VERSION__: JSON.stringify(pkg.version) },
  jsx: 'automatic',
  plugins: [noDevtools],
  // CommonJS dependencies bundled into ESM need require/__dirname; node-sqlite3-wasm finds its .wasm via __dirname.
  banner: {
    js: [
      "import { createRequire as __svcCreateRequire } from 'node:module';",
      "import { fileURLToPath as __svcFileURLToPath } from 'node:url';",
      "import { dirname as __svcDirname } from 'node:path';",
      'const require = __svcCreateRequire(import.meta.url);',
      'const __filename = __svcFileURLToPath(import.meta.url);',
      'const __dirname = __svcDirname(__filename);',
    ].join('\n'),
  },
});

copyFileSync(
  join(dirname(require.resolve('node-sqlite3-wasm')), 'node-sqlite3-wasm.wasm'),
  join(dist, 'node-sqlite3-wasm.wasm'),
);
// The account pages (/login, /accept-invite, ...): src/http/pages.ts serves them from dist/pages/ beside the bundle.
rmSync(join(dist, 'pages'), { recursive: true, force: true });
cpSync(join(root, 'dashboard', 'pages'), join(dist, 'pages'), { recursive: true });
console.log('built dist/svc.mjs');
