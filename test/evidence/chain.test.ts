/** The ledger's fast event hash is the chain's definition (DESIGN.md section 2), written out. */
import assert from 'node:assert/strict';
import test from 'node:test';
import { appendedEventHash, eventHash, genesisHash, verifyChain } from '../../src/evidence/chain.ts';
import type { TraceEvent } from '../../src/evidence/types.ts';

test('appendedEventHash equals eventHash for every kind of event', () => {
  const payloads: Array<Record<string, unknown>> = [
    {},
    { decision: 'allow', policy: null, reason: 'no policy matched' },
    { z: 1, a: [1, 'two', { y: null, b: true }], m: { nested: { deeper: [] } }, skipped: undefined },
    { text: 'héllo "quoted" \\ \u2028 \ud83d\ude00', n: -0, big: 1e21, tiny: 5e-7, nan: Number.NaN },
  ];
  let prev = genesisHash('run_x');
  for (const [i, payload] of payloads.entries()) {
    for (const type of ['run.started', 'cache.miss', 'tïpe "odd"']) {
      const event = { runId: 'run_0193a1b2c3d4aabbccddeeff', seq: i + 1, type, payload, createdAt: 1_732_000_000_000 + i };
      assert.equal(appendedEventHash(prev, event.runId, event.seq, type, payload, event.createdAt), eventHash(prev, event));
    }
    prev = eventHash(prev, { runId: 'run_x', seq: i + 1, type: 't', payload, createdAt: i });
  }
});

test('a chain built with the fast hash verifies', () => {
  const runId = 'run_0193a1b2c3d4aabbccddeeff';
  let prev = genesisHash(runId);
  const events: TraceEvent[] = [];
  for (let seq = 1; seq <= 5; seq++) {
    const payload = { seq, list: [seq, String(seq)] };
    const hash = appendedEventHash(prev, runId, seq, `step.${seq}`, payload, 1000 + seq);
    events.push({ runId, seq, type: `step.${seq}`, payload, createdAt: 1000 + seq, prevHash: prev, hash });
    prev = hash;
  }
  assert.equal(verifyChain(runId, events, 5).ok, true);
});
