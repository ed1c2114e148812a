import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { scavengePromotions } from '../support/scavenges.ts';

/**
 * Bytes the young generation's collections promote per request while test/gateway/fixtures/pipeline-load.ts runs its
 * measured requests (`--trace-gc-nvp`: one line per collection, `gc=s` for a scavenge): the median scavenge's
 * promotion over the requests per scavenge. The median, not the sum: a few scavenges meet a commit or the in-memory
 * database growing and promote 100-300 KB at once, which moves a sum by hundreds of bytes per request from one run to
 * the next, while the traps this guards against make every scavenge promote (3.4-8.4 KB per request here).
 */
async function promotedPerRequest(mode: 'buffered' | 'stream'): Promise<{ bytes: number; scavenges: number }> {
  const { promoted, requests } = await scavengePromotions(join(import.meta.dirname, 'fixtures', 'pipeline-load.ts'), [mode]);
  assert.ok(requests !== null && requests > 0, 'the fixture reported no measured requests');
  promoted.sort((a, b) => a - b);
  const median = promoted[Math.floor(promoted.length / 2)] ?? 0;
  return { bytes: median / (requests / Math.max(1, promoted.length)), scavenges: promoted.length };
}

// The two fixtures run at once, each in its own process (what one's scavenges promote is its own): each is tens of
// seconds of CPU on a loaded machine, and the test timeout applies to the whole file under node --test.
describe('what the young generation promotes per gateway request', { concurrency: true }, () => {
  test("a gateway request's objects die young: the scavenges promote next to nothing of them", async () => {
    // A request's run recorder, records, adapter and cached answer used to be promoted, ~3.4 KB per request here (4.4
    // KB in svc under load), by two Node 20 traps: per-request object literals with getters, and spreads followed by
    // new keys (docs/performance-notes.md, "What the young generation promoted, found"). Now ~25 bytes. (Without svc's
    // `--no-allocation-site-pretenuring`, bin/launch.mjs, some processes settle at ~0.9 KB.)
    const { bytes, scavenges } = await promotedPerRequest('buffered');
    assert.ok(scavenges >= 5, `only ${scavenges} scavenges: too few requests to judge`);
    assert.ok(bytes < 500, `the scavenges promoted ${Math.round(bytes)} bytes per request`);
  });

  test("a streamed gateway request's objects die young too", async () => {
    // Generator functions made per request or per stream (the pipeline's relay, the SSE parsers' drain, the mock's
    // stream) kept each stream's objects, ~8 KB per request here (docs/performance-notes.md, "Generators made per
    // request").
    const { bytes, scavenges } = await promotedPerRequest('stream');
    assert.ok(scavenges >= 5, `only ${scavenges} scavenges: too few requests to judge`);
    assert.ok(bytes < 1_000, `the scavenges promoted ${Math.round(bytes)} bytes per streamed request`);
  });
});
