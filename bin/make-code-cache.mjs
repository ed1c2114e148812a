#!/usr/bin/env node
// Makes the code cache of a bundle (bin/launch.mjs): runs it as bin/svc does, on an empty data directory, and records
// every function compiled by then. Run by bin/build.mjs in a process of its own, which it ends; the caller removes
// the data directory.
//   node bin/make-code-cache.mjs <dist/serve.cjs | dist/svc.cjs> <empty data directory>
import fs from 'node:fs';
import { request } from 'node:http';
import { basename } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runCommonJsBundle, setEngineFlags, writeCodeCache } from './launch.mjs';

const [bundle, dataDir] = process.argv.slice(2);
setEngineFlags();
if (basename(bundle) === 'serve.cjs') await cacheServe();
else cacheCommand();

/** `svc serve` on port 0, asked for /health once it listens. */
async function cacheServe() {
  // The bundle reads its command line from process.argv, and says where it listens on stdout: written to descriptor 1
  // itself (fs.writeSync, so that a failing stdout cannot stop it), where this reads it.
  process.argv = [process.argv[0], 'svc', 'serve', '--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir, '--log-level', 'silent'];
  const listening = new Promise((resolve) => {
    const writeSync = fs.writeSync;
    fs.writeSync = (fd, chunk, ...rest) => {
      const address = fd === 1 ? /svc listening on (http:\/\/\S+)/.exec(String(chunk))?.[1] : undefined;
      if (address) resolve(address);
      return writeSync(fd, chunk, ...rest);
    };
  });
  const compiled = runCommonJsBundle(bundle);
  const address = await listening;
  const status = await new Promise((resolve, reject) => {
    request(`${address}/health`, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    })
      .on('error', reject)
      .end();
  });
  if (status !== 200) throw new Error(`svc serve answered /health with ${status}`);
  // V8 takes a cache only under the flags it was made with, and a start compiles the bundle under setEngineFlags's and
  // V8's defaults for the rest. svc serve has changed one since: the young generation's growth factor, stopped at its
  // ceiling while the server runs (src/core/young-generation.ts). Back to V8's default for the cache.
  setFlagsFromString('--semi-space-growth-factor=2');
  writeCodeCache(bundle, compiled);
  process.exit(0);
}

/**
 * `svc keys list --json`: an admin command in-process (the data directory opened, the store and its services loaded,
 * a table read and printed), which compiles most of what every other command runs too. The cache is written as the
 * command exits, if it succeeded.
 */
function cacheCommand() {
  process.argv = [process.argv[0], 'svc', 'keys', 'list', '--json', '--data-dir', dataDir];
  const compiled = runCommonJsBundle(bundle);
  process.once('exit', (code) => {
    if (code === 0) writeCodeCache(bundle, compiled);
  });
}
