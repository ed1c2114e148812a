/**
 * The young generation's ceiling, in a process of its own (a semi-space, once grown, is not given back on demand):
 * with the same allocations, one whose young objects keep surviving, V8 grows the young generation to its most
 * (32 MiB on 64-bit) without the cap and stops at the cap with it; after the stop V8's default growth is restored.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';

const MODULE = pathToFileURL(new URL('../../src/core/young-generation.ts', import.meta.url).pathname).href;

/**
 * Allocate ~400 MB in rounds of 10,000 objects, each round replacing the last (so ~1 MB survives each scavenge, as
 * the requests in flight do in svc), with a turn of the event loop between rounds; report the young generation's
 * largest size: under the cap (if any), then again after its stop.
 */
const SCRIPT = `
const { capYoungGeneration, youngGenerationBytes } = await import(${JSON.stringify(MODULE)});
const semiSpaceBytes = Number(process.argv[1]);
const ring = new Array(10_000);
async function largestWhileAllocating() {
  let largest = 0;
  for (let round = 0; round < 4_000; round += 1) {
    for (let i = 0; i < ring.length; i += 1) ring[i] = { round, i, text: 'x' + i };
    await new Promise((resolve) => setImmediate(resolve));
    largest = Math.max(largest, youngGenerationBytes());
  }
  return largest;
}
const stop = semiSpaceBytes > 0 ? capYoungGeneration(semiSpaceBytes) : () => {};
const largest = await largestWhileAllocating();
stop();
const afterStop = await largestWhileAllocating();
process.stdout.write(JSON.stringify({ largest, afterStop }));
`;

function largestYoungGeneration(semiSpaceBytes: number): { largest: number; afterStop: number } {
  const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', SCRIPT, String(semiSpaceBytes)], {
    encoding: 'utf8',
  });
  return JSON.parse(out) as { largest: number; afterStop: number };
}

const MiB = 1024 * 1024;

test('without the cap the young generation grows to its most; with it, to twice the semi-space ceiling, and on past it once stopped', () => {
  const uncapped = largestYoungGeneration(0).largest;
  assert.ok(uncapped >= 16 * MiB, `uncapped young generation ${uncapped / MiB} MiB`);
  const capped = largestYoungGeneration(2 * MiB);
  assert.equal(capped.largest, 4 * MiB);
  assert.ok(capped.afterStop > 4 * MiB, `after the stop the young generation stayed at ${capped.afterStop / MiB} MiB`);
});
