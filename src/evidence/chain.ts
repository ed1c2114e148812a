/**
 * The trace hash chain of DESIGN.md section 2: `hash_0 = sha256("run:" || runId)`,
 * `hash_n = sha256(hash_{n-1} || canonical_json(event_n))` over the event's identity and content.
 */
import { canonicalJson, chainHash } from '../core/canonical-json.ts';
import { sha256Hex } from '../core/ids.ts';
import { unreadablePayload } from './stored-payload.ts';
import type { TraceEvent } from './types.ts';

export function genesisHash(runId: string): string {
  return sha256Hex(`run:${runId}`);
}

export function eventHash(prevHash: string, event: Pick<TraceEvent, 'runId' | 'seq' | 'type' | 'payload' | 'createdAt'>): string {
  return chainHash(prevHash, {
    runId: event.runId,
    seq: event.seq,
    type: event.type,
    payload: event.payload,
    createdAt: event.createdAt,
  });
}

/**
 * The same hash as `eventHash` with the envelope written out in canonical key order (createdAt, payload, runId,
 * seq, type) instead of built as an object and sorted: the ledger hashes every event of every request with it.
 * test/evidence/chain.test.ts holds the two equal.
 */
export function appendedEventHash(prevHash: string, runId: string, seq: number, type: string, payload: Record<string, unknown>, createdAt: number): string {
  return sha256Hex(
    `${prevHash}{"createdAt":${canonicalJson(createdAt)},"payload":${canonicalJson(payload)},"runId":${JSON.stringify(runId)},"seq":${canonicalJson(seq)},"type":${JSON.stringify(type)}}`,
  );
}

/** The event with sequence number `seq` that follows the chain head `prevHash`, linked to it. */
export function linkedEvent(prevHash: string, runId: string, seq: number, type: string, payload: Record<string, unknown>, createdAt: number): TraceEvent {
  return { runId, seq, type, payload, createdAt, prevHash, hash: appendedEventHash(prevHash, runId, seq, type, payload, createdAt) };
}

/**
 * Why `event`, read as the `count`th of its run's trace after the head `prev`, does not continue the chain, if it does
 * not (its `hash` then is the new head).
 */
function linkMismatch(event: TraceEvent, count: number, prev: string): { brokenAt: number; reason: string } | null {
  if (event.seq !== count) {
    // Read in seq order: a number past the count means the ones before it are not stored; any other (0, negative, a
    // fraction) is an event no append numbered, stored where event `count` belongs.
    const reason = event.seq > count ? `event ${count} is missing` : `an event numbered ${event.seq} is stored out of the run's sequence`;
    return { brokenAt: count, reason };
  }
  if (event.prevHash !== prev) return { brokenAt: event.seq, reason: 'prevHash does not link to the previous event' };
  const unreadable = unreadablePayload(event.payload);
  if (unreadable !== null) return { brokenAt: event.seq, reason: `the event's stored payload ${unreadable}` };
  if (eventHash(prev, event) !== event.hash) return { brokenAt: event.seq, reason: 'event content does not match its hash' };
  return null;
}

export interface ChainVerdict {
  ok: boolean;
  eventCount: number;
  /** The first sequence number whose stored link or hash does not match the recomputation. */
  brokenAt: number | null;
  reason: string | null;
  headHash: string;
}

/**
 * A run's chain recomputed a page of events at a time, in append order (`verifyChain` feeds it all of them at once):
 * events past a break are counted, not hashed.
 */
export function chainWalker(runId: string) {
  let prev = genesisHash(runId);
  let count = 0;
  let broken: { brokenAt: number; reason: string; headHash: string } | null = null;
  return {
    get count(): number {
      return count;
    },
    feed(events: readonly TraceEvent[]): void {
      for (const event of events) {
        count += 1;
        if (broken) continue;
        const mismatch = linkMismatch(event, count, prev);
        if (mismatch) broken = { ...mismatch, headHash: prev };
        else prev = event.hash;
      }
    },
    /** The verdict on the events fed, of a run that records `expectedCount` of them. */
    verdict(expectedCount: number): ChainVerdict {
      if (broken) return { ok: false, eventCount: count, ...broken };
      if (count !== expectedCount) {
        // Fewer stored: the first one missing; more: the first one the row does not count.
        const brokenAt = Math.min(count, expectedCount) + 1;
        return { ok: false, eventCount: count, brokenAt, reason: `the run records ${expectedCount} events but ${count} are stored`, headHash: prev };
      }
      return { ok: true, eventCount: count, brokenAt: null, reason: null, headHash: prev };
    },
  };
}

/** Recompute a run's chain from its events in append order. */
export function verifyChain(runId: string, events: readonly TraceEvent[], expectedCount: number): ChainVerdict {
  const walker = chainWalker(runId);
  walker.feed(events);
  return walker.verdict(expectedCount);
}
