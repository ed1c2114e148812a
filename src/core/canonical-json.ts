/**
 * Canonical JSON: object keys sorted, no whitespace, so that equal values always hash equally.
 * Used by the hash chains of trace events and audit rows, the exact-cache key and the request fingerprint.
 *
 * The output is frozen: it feeds hash chains already stored in users' data files, so it must stay byte-identical
 * to the original definition kept in test/core/canonical-json.test.ts (`referenceCanonicalJson`), quirks included:
 * no `toJSON` (a Date is `{}`), non-finite numbers and functions/symbols/undefined as values are `null`, members
 * whose value is `undefined` are left out, and a sparse array's holes are empty (`[,1]`). This version only builds
 * the string without the intermediate arrays of map/filter/join, which the hot path (every gateway request hashes
 * several values) paid for in allocations.
 */
import { sha256Hex } from './ids.ts';

/** Strings that need no escaping (the common case) are quoted by hand; JSON.stringify handles the rest. */
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

function quote(text: string): string {
  return NEEDS_ESCAPE.test(text) ? JSON.stringify(text) : `"${text}"`;
}

/** Object keys repeat across requests (`role`, `content`, ...): the quoted form of short ones is kept, bounded. */
const quotedKeys = new Map<string, string>();
const QUOTED_KEYS_MAX = 4096;
const QUOTED_KEY_LENGTH_MAX = 64;

function quoteKey(key: string): string {
  let quoted = quotedKeys.get(key);
  if (quoted === undefined) {
    quoted = quote(key);
    if (quotedKeys.size < QUOTED_KEYS_MAX && key.length <= QUOTED_KEY_LENGTH_MAX) quotedKeys.set(key, quoted);
  }
  return quoted;
}

function primitive(value: unknown): string {
  switch (typeof value) {
    case 'string':
      return quote(value);
    case 'number':
      // String(-0) is "0" as JSON.stringify writes it.
      return Number.isFinite(value) ? String(value) : 'null';
    case 'boolean':
      return value ? 'true' : 'false';
    case 'bigint':
      // JSON.stringify throws on a bigint; so did the original definition.
      return JSON.stringify(value);
    default:
      // null, undefined, functions, symbols.
      return 'null';
  }
}

/** Up to this many keys an insertion sort is used; it takes quadratic time, so a larger object gets V8's sort. */
const INSERTION_SORT_MAX = 16;

/**
 * Sort an object's keys in place, as `Array.prototype.sort()` would (UTF-16 code units; keys are unique, so
 * stability does not matter). The objects hashed here mostly have a handful of keys, and V8's sort allocates its
 * work arrays on every call: ~13 KB per gateway request, a tenth of what a request allocated.
 */
function sortKeys(keys: string[]): void {
  if (keys.length > INSERTION_SORT_MAX) {
    keys.sort();
    return;
  }
  for (let i = 1; i < keys.length; i += 1) {
    const key = keys[i]!;
    let j = i - 1;
    while (j >= 0 && keys[j]! > key) {
      keys[j + 1] = keys[j]!;
      j -= 1;
    }
    keys[j + 1] = key;
  }
}

function write(value: unknown): string {
  if (value === null || typeof value !== 'object') return primitive(value);
  if (Array.isArray(value)) {
    const length = value.length;
    if (length === 0) return '[]';
    let out = '[';
    for (let i = 0; i < length; i += 1) {
      if (i > 0) out += ',';
      // A hole stays empty, as Array.prototype.map + join left it.
      if (i in value) out += write(value[i]);
    }
    return `${out}]`;
  }
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record);
  if (keys.length > 1) sortKeys(keys);
  let out = '{';
  let first = true;
  for (const key of keys) {
    const member = record[key];
    if (member === undefined) continue;
    if (first) first = false;
    else out += ',';
    out += quoteKey(key);
    out += ':';
    out += write(member);
  }
  return `${out}}`;
}

export function canonicalJson(value: unknown): string {
  return write(value);
}

/** One link of a hash chain: sha256(previousHash || canonical_json(event)). */
export function chainHash(previousHash: string, event: unknown): string {
  return sha256Hex(previousHash + canonicalJson(event));
}
