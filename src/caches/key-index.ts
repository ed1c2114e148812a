/**
 * Where each stored cache entry is: a map from an entry's identity (tenant, tier, key) to its row id in
 * `cache_entries`, held in typed arrays instead of a unique index in the data file.
 *
 * The exact cache's keys are SHA-256 digests, so in a b-tree every new entry lands on a random leaf page: each
 * commit wrote about one more 4 KiB page per request into the log, and again at the checkpoint (~40% of the pages a
 * live request wrote). Rows appended by row id and found through this map leave only sequential pages to write. A
 * miss costs two string hashes and no read, as the Bloom filter this replaces did.
 *
 * An identity is kept as a 64-bit fingerprint (two independent 32-bit hashes), not as its text: 16 bytes a slot, at
 * most three slots in four used. Two identities with one fingerprint (about one chance in 40 million among a
 * million entries) share a slot; the caller reads the row's own identity back before trusting it, so such a
 * collision is a miss, never a wrong answer.
 */

/** 32-bit FNV-1a of a string's UTF-16 code units. */
function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i += 1) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/** A multiply-rotate hash (MurmurHash3's body and finalizer over code units): independent of FNV-1a's bits. */
function murmur(text: string): number {
  let hash = 0x9747b28c;
  for (let i = 0; i < text.length; i += 1) {
    let k = Math.imul(text.charCodeAt(i), 0xcc9e2d51);
    k = (k << 15) | (k >>> 17);
    hash ^= Math.imul(k, 0x1b873593);
    hash = (hash << 13) | (hash >>> 19);
    hash = (Math.imul(hash, 5) + 0xe6546b64) | 0;
  }
  hash ^= text.length;
  hash ^= hash >>> 16;
  hash = Math.imul(hash, 0x85ebca6b);
  hash ^= hash >>> 13;
  hash = Math.imul(hash, 0xc2b2ae35);
  hash ^= hash >>> 16;
  return hash >>> 0;
}

const EMPTY = 0;
/** A deleted slot: probing goes on past it; an insert may reuse it. */
const DELETED = -1;
const MIN_SLOTS = 1024;

export class KeyIndex {
  private high: Uint32Array;
  private low: Uint32Array;
  /** Row ids (positive integers), or EMPTY / DELETED. */
  private rows: Float64Array;
  private mask: number;
  private live = 0;
  private deleted = 0;

  constructor() {
    this.high = new Uint32Array(MIN_SLOTS);
    this.low = new Uint32Array(MIN_SLOTS);
    this.rows = new Float64Array(MIN_SLOTS);
    this.mask = MIN_SLOTS - 1;
  }

  get size(): number {
    return this.live;
  }

  /** Bytes held by the arrays. */
  get bytes(): number {
    return this.rows.length * 16;
  }

  get(identity: string): number | undefined {
    const slot = this.find(fnv1a(identity), murmur(identity));
    return slot < 0 ? undefined : this.rows[slot];
  }

  /** Point `identity` at `rowId` (a row just written); returns the row it pointed at before, if another. */
  set(identity: string, rowId: number): number | undefined {
    return this.place(identity, rowId, false);
  }

  /**
   * Point `identity` at `rowId` (a row read from the table), unless it already points at a newer row: a higher id,
   * as rows are appended. Returns the row that lost: the one replaced, or `rowId` itself when it is the older.
   */
  setUnlessNewer(identity: string, rowId: number): number | undefined {
    return this.place(identity, rowId, true);
  }

  private place(identity: string, rowId: number, keepNewer: boolean): number | undefined {
    const high = fnv1a(identity);
    const low = murmur(identity);
    const found = this.find(high, low);
    if (found >= 0) {
      const current = this.rows[found]!;
      if (current === rowId) return undefined;
      if (keepNewer && current > rowId) return rowId;
      this.rows[found] = rowId;
      return current;
    }
    if ((this.live + this.deleted + 1) > this.rows.length * 0.75) this.resize();
    this.insert(high, low, rowId);
    this.live += 1;
    return undefined;
  }

  /** Forget `identity` if it points at `rowId` (a newer row stored under it since stays). */
  delete(identity: string, rowId: number): void {
    const slot = this.find(fnv1a(identity), murmur(identity));
    if (slot < 0 || this.rows[slot] !== rowId) return;
    this.rows[slot] = DELETED;
    this.live -= 1;
    this.deleted += 1;
  }

  private find(high: number, low: number): number {
    for (let slot = low & this.mask; ; slot = (slot + 1) & this.mask) {
      const row = this.rows[slot]!;
      if (row === EMPTY) return -1;
      if (row !== DELETED && this.low[slot] === low && this.high[slot] === high) return slot;
    }
  }

  private insert(high: number, low: number, rowId: number): void {
    let slot = low & this.mask;
    while (this.rows[slot]! > 0) slot = (slot + 1) & this.mask;
    if (this.rows[slot] === DELETED) this.deleted -= 1;
    this.high[slot] = high;
    this.low[slot] = low;
    this.rows[slot] = rowId;
  }

  /**
   * Rehash, dropping deleted slots, into the smallest arrays the live keys fill at most half of: larger when they
   * grew, the same after churn, smaller after many deletes.
   */
  private resize(): void {
    const { high, low, rows } = this;
    let slots = MIN_SLOTS;
    while (slots * 0.5 < this.live + 1) slots *= 2;
    this.high = new Uint32Array(slots);
    this.low = new Uint32Array(slots);
    this.rows = new Float64Array(slots);
    this.mask = slots - 1;
    this.deleted = 0;
    for (let slot = 0; slot < rows.length; slot += 1) {
      if (rows[slot]! > 0) this.insert(high[slot]!, low[slot]!, rows[slot]!);
    }
  }
}
