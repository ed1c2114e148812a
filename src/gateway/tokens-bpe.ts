/**
 * Byte-pair encoding over a tiktoken rank file, in time about linear in the text whatever its shape.
 *
 * js-tiktoken's encoder merges a pre-tokenised piece by rescanning every adjacent pair after each merge, building a
 * string key per pair: quadratic in the piece's length with a heavy constant. The pre-tokeniser leaves some runs
 * whole however long they are (whitespace, newlines, one punctuation character repeated, a word without spaces), so
 * 32,000 spaces in one prompt held the event loop for over a minute, and even 64-character pieces of random letters or
 * ideographs cost milliseconds each. This encoder gives the same ids (same pre-tokeniser pattern, same merge order:
 * lowest rank first, leftmost on ties) but keeps the candidate pairs in a heap and looks up only the two pairs a merge
 * changes, so a piece of n bytes costs O(n log n) and no piece needs to be cut.
 */
import type { TiktokenBPE } from 'js-tiktoken/lite';

export interface BpeEncoder {
  /** Token ids of `text`. Special-token spellings such as `<|endoftext|>` are encoded as ordinary text. */
  encode(text: string): number[];
  /** The text of `ids`; a cut multi-byte character decodes as U+FFFD. Unknown ids are skipped. */
  decode(ids: readonly number[]): string;
}

/** Token bytes as a latin1 string (one char per byte): a compact Map key, cheap to cut out of a piece. */
type ByteString = string;

const NO_RANK = -1;

interface Vocabulary {
  ranks: Map<ByteString, number>;
  bytesOf: Map<number, ByteString>;
  /** Ranks of the two-byte tokens by `first << 8 | second`: every piece starts by looking up all its byte pairs. */
  pairRanks: Int32Array;
  /** Length of the longest token: a longer span has no rank, so its key is never cut out. */
  maxTokenBytes: number;
  /** Rank of each single byte's token (rank files have all 256): the parts a piece starts from. */
  byteRanks: Int32Array;
}

/** `bpe_ranks` is js-tiktoken's packed form: lines of `<name> <first rank> <base64 token> <base64 token> ...`. */
function readVocabulary(packed: string): Vocabulary {
  const ranks = new Map<ByteString, number>();
  const bytesOf = new Map<number, ByteString>();
  const pairRanks = new Int32Array(1 << 16).fill(NO_RANK);
  const byteRanks = new Int32Array(256).fill(NO_RANK);
  let maxTokenBytes = 0;
  for (const line of packed.split('\n')) {
    if (!line) continue;
    const [, first, ...tokens] = line.split(' ');
    const offset = Number.parseInt(first ?? '', 10);
    tokens.forEach((token, i) => {
      const bytes = Buffer.from(token, 'base64').toString('latin1');
      ranks.set(bytes, offset + i);
      bytesOf.set(offset + i, bytes);
      if (bytes.length === 1) byteRanks[bytes.charCodeAt(0)] = offset + i;
      if (bytes.length === 2) pairRanks[(bytes.charCodeAt(0) << 8) | bytes.charCodeAt(1)] = offset + i;
      maxTokenBytes = Math.max(maxTokenBytes, bytes.length);
    });
  }
  return { ranks, bytesOf, pairRanks, maxTokenBytes, byteRanks };
}

function rankOfSpan(bytes: ByteString, start: number, end: number, vocabulary: Vocabulary): number {
  if (end - start === 2) return vocabulary.pairRanks[(bytes.charCodeAt(start) << 8) | bytes.charCodeAt(start + 1)]!;
  if (end - start > vocabulary.maxTokenBytes) return NO_RANK;
  return vocabulary.ranks.get(bytes.slice(start, end)) ?? NO_RANK;
}

const JOINED_SLOTS_BITS = 16;

/**
 * The rank of two tokens joined, by the two tokens' ranks, remembered in a direct-mapped table of 65,536 slots
 * (768 KB): a long piece asks the same few joins again and again (a run of spaces: runs of 2, 4, ... 128 spaces),
 * and a remembered join costs a few integer reads where cutting the bytes out and hashing them cost up to 256 bytes'
 * work. A join not remembered, or overwritten by another, is looked up by its bytes as before.
 */
class JoinedRanks {
  private readonly lefts = new Int32Array(1 << JOINED_SLOTS_BITS).fill(NO_RANK);
  private readonly rights = new Int32Array(1 << JOINED_SLOTS_BITS);
  private readonly joined = new Int32Array(1 << JOINED_SLOTS_BITS);

  constructor(private readonly vocabulary: Vocabulary) {}

  /** The rank of `bytes[start, end)`, the token ranked `left` followed by the one ranked `right`. */
  rank(left: number, right: number, bytes: ByteString, start: number, end: number): number {
    if (end - start > this.vocabulary.maxTokenBytes) return NO_RANK;
    const slot = Math.imul(Math.imul(left, 0x9e3779b1) ^ right, 0x85ebca6b) >>> (32 - JOINED_SLOTS_BITS);
    if (this.lefts[slot] === left && this.rights[slot] === right) return this.joined[slot]!;
    const rank = rankOfSpan(bytes, start, end, this.vocabulary);
    this.lefts[slot] = left;
    this.rights[slot] = right;
    this.joined[slot] = rank;
    return rank;
  }
}

/**
 * A binary min-heap of candidate merges, each packed in one number as `rank * 2^32 + start`, so the order is lowest
 * rank first and, among equal ranks (the same bytes at several places), leftmost first: js-tiktoken's order.
 */
class MergeHeap {
  private readonly items: number[] = [];
  private size = 0;
  /** The rank of the entry `pop()` returned last. */
  lastRank = NO_RANK;

  get empty(): boolean {
    return this.size === 0;
  }

  /** Adds without ordering; call `order()` before the first `pop()`. */
  add(rank: number, start: number): void {
    this.items[this.size++] = rank * 2 ** 32 + start;
  }

  order(): void {
    for (let i = (this.size >> 1) - 1; i >= 0; i--) this.siftDown(i, this.items[i]!);
  }

  push(rank: number, start: number): void {
    const items = this.items;
    const item = rank * 2 ** 32 + start;
    let i = this.size++;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (items[parent]! <= item) break;
      items[i] = items[parent]!;
      i = parent;
    }
    items[i] = item;
  }

  /** Removes the smallest entry and returns its start (its rank is then `lastRank`). Call only when not empty. */
  pop(): number {
    const top = this.items[0]!;
    this.size--;
    if (this.size > 0) this.siftDown(0, this.items[this.size]!);
    this.lastRank = Math.floor(top / 2 ** 32);
    return top - this.lastRank * 2 ** 32;
  }

  /** Places `item` at `from` or below it, moving smaller children up. */
  private siftDown(from: number, item: number): void {
    const items = this.items;
    const size = this.size;
    let i = from;
    for (;;) {
      let child = 2 * i + 1;
      if (child >= size) break;
      if (child + 1 < size && items[child + 1]! < items[child]!) child++;
      if (items[child]! >= item) break;
      items[i] = items[child]!;
      i = child;
    }
    items[i] = item;
  }
}

/**
 * Merges the bytes of one piece into tokens. Parts are a linked list over byte offsets (a part is named by its first
 * byte); `partRank[i]` is part i's token (every part is one: a single byte is, and a join is made only into a token)
 * and `pairRank[i]` the rank of part i joined with its successor. A heap entry is stale once that pair changed,
 * and a changed pair always has another rank (its bytes differ, and every byte sequence has one rank), so comparing
 * ranks is enough to skip stale entries.
 */
function mergePiece(bytes: ByteString, vocabulary: Vocabulary, joined: JoinedRanks, out: number[]): void {
  const n = bytes.length;
  const next = new Int32Array(n);
  const prev = new Int32Array(n);
  const partRank = new Int32Array(n);
  const pairRank = new Int32Array(n);
  const heap = new MergeHeap();
  for (let i = 0; i < n; i++) {
    next[i] = i + 1;
    prev[i] = i - 1;
    partRank[i] = vocabulary.byteRanks[bytes.charCodeAt(i)]!;
    pairRank[i] = i + 1 < n ? rankOfSpan(bytes, i, i + 2, vocabulary) : NO_RANK;
    if (pairRank[i] !== NO_RANK) heap.add(pairRank[i]!, i);
  }
  heap.order();
  // Ranks the pair of part `start` and its successor afresh (one of them just grew), and queues it if it is a token.
  const reconsider = (start: number): void => {
    const second = next[start]!;
    if (second >= n) {
      pairRank[start] = NO_RANK;
      return;
    }
    const rank = joined.rank(partRank[start]!, partRank[second]!, bytes, start, next[second]!);
    pairRank[start] = rank;
    if (rank !== NO_RANK) heap.push(rank, start);
  };
  while (!heap.empty) {
    const start = heap.pop();
    if (pairRank[start] !== heap.lastRank) continue;
    const absorbed = next[start]!;
    next[start] = next[absorbed]!;
    if (next[start]! < n) prev[next[start]!] = start;
    partRank[start] = heap.lastRank;
    pairRank[absorbed] = NO_RANK;
    reconsider(start);
    if (prev[start]! >= 0) reconsider(prev[start]!);
  }
  for (let i = 0; i < n; i = next[i]!) out.push(partRank[i]!);
}

/** An encoder over `ranks` (e.g. js-tiktoken's `o200k_base`). Building it parses the table: ~0.3 s for o200k. */
export function createBpeEncoder(ranks: TiktokenBPE): BpeEncoder {
  const vocabulary = readVocabulary(ranks.bpe_ranks);
  const joined = new JoinedRanks(vocabulary);
  const pieces = new RegExp(ranks.pat_str, 'gu');
  const utf8 = new TextDecoder('utf-8');
  return {
    encode(text) {
      const ids: number[] = [];
      for (const match of text.matchAll(pieces)) {
        const bytes = Buffer.from(match[0], 'utf8').toString('latin1');
        const whole = bytes.length <= vocabulary.maxTokenBytes ? vocabulary.ranks.get(bytes) : undefined;
        if (whole !== undefined) ids.push(whole);
        else mergePiece(bytes, vocabulary, joined, ids);
      }
      return ids;
    },
    decode(ids) {
      let bytes = '';
      for (const id of ids) bytes += vocabulary.bytesOf.get(id) ?? '';
      return utf8.decode(Buffer.from(bytes, 'latin1'));
    },
  };
}
