// Builds the test files test/run.mjs runs into one esbuild bundle each, in one build, so that a file's process loads
// plain JavaScript instead of compiling every .ts module through tsx's loader hooks: loading the app that way cost
// ~2.3 s of CPU per file, bundled ~0.8 s, and most of the files load it. Plain JavaScript: run.mjs runs without tsx.
import { build } from 'esbuild';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { dirname, extname, join, relative, sep } from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * Where the bundles go (git-ignored): inside the package, as the tests are, so that their imports of packages resolve
 * to its node_modules and its own exports (`svc/client`) resolve at all: a package's scope, where node resolves its
 * name to itself, ends at a node_modules directory, so a cache under node_modules/.cache does not do.
 */
export const BUILD_DIR = join('test', '.build');

const LOADERS = { '.ts': 'ts', '.mts': 'ts', '.tsx': 'tsx', '.js': 'js', '.mjs': 'js' };

/**
 * Bundles `files` (paths relative to `root`) into `root`/BUILD_DIR/run-<pid>/ and returns each file's bundle, by
 * file. Packages stay imports; the repository's code shared by several files goes into chunks. Directories of earlier
 * runs that ended without removing theirs (killed) are removed; a run going on beside this one keeps its own.
 */
export async function bundleTestFiles(root, files) {
  const buildRoot = join(root, BUILD_DIR);
  removeAbandonedRuns(buildRoot);
  const outdir = join(buildRoot, `run-${process.pid}`);
  rmSync(outdir, { recursive: true, force: true });
  mkdirSync(outdir, { recursive: true });
  await build({
    absWorkingDir: root,
    entryPoints: files,
    outdir,
    outbase: root,
    outExtension: { '.js': '.mjs' },
    chunkNames: 'chunks/[name]-[hash]',
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    // The node that runs the bundles, as tsx does: under a bare `node20` esbuild drops the import attribute of
    // src/gateway/tool-schemas.ts's JSON import (node 20.0 had none), and node refuses the import without it.
    target: `node${process.versions.node}`,
    packages: 'external',
    tsconfig: join(root, 'tsconfig.json'),
    loader: { '.json': 'json' },
    // Function and class names stay what the source says, in assertions and stack traces, as under tsx.
    keepNames: true,
    sourcemap: true,
    logLevel: 'error',
    plugins: [originalImportMeta(root)],
  });
  const bundles = new Map();
  for (const file of files) bundles.set(file, join(outdir, file.slice(0, -extname(file).length) + '.mjs'));
  return { outdir, bundles, remove: () => rmSync(outdir, { recursive: true, force: true }) };
}

/**
 * In a bundle, import.meta is the bundle's; the sources mean their own file by it (a file beside them, the
 * repository's root, a fixture to run). So the repository's own modules get their file's URL, directory and path
 * written in as string literals, and `new URL('x', import.meta.url)` goes on finding what it found from source.
 */
function originalImportMeta(root) {
  const own = (path) => !relative(root, path).startsWith('..') && !path.split(sep).includes('node_modules');
  return {
    name: 'original-import-meta',
    setup(build) {
      build.onLoad({ filter: /\.(m?ts|tsx|m?js)$/ }, ({ path }) => {
        if (!own(path)) return undefined;
        const values = { url: pathToFileURL(path).href, dirname: dirname(path), filename: path };
        const contents = readFileSync(path, 'utf8').replace(/\bimport\.meta\.(url|dirname|filename)\b/g, (_, key) => JSON.stringify(values[key]));
        return { contents, loader: LOADERS[extname(path)] };
      });
    },
  };
}

function removeAbandonedRuns(buildRoot) {
  if (!existsSync(buildRoot)) return;
  for (const name of readdirSync(buildRoot)) {
    const pid = Number(/^run-(\d+)$/.exec(name)?.[1]);
    if (!pid || !isRunning(pid)) rmSync(join(buildRoot, name), { recursive: true, force: true });
  }
}

function isRunning(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === 'EPERM';
  }
}
