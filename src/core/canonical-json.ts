/**
 * Canonical JSON: object keys sorted, no whitespace, so that equal values always hash equally.
 * Used by the hash chains of trace events and audit rows.
 */
import { sha256Hex } from './ids.ts';

export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    if (typeof value === 'number' && !Number.isFinite(value)) return 'null';
    return JSON.stringify(value) ?? 'null';
  }
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.keys(value as Record<string, unknown>)
    .filter((key) => (value as Record<string, unknown>)[key] !== undefined)
    .sort()
    .map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`);
  return `{${entries.join(',')}}`;
}

/** One link of a hash chain: sha256(previousHash || canonical_json(event)). */
export function chainHash(previousHash: string, event: unknown): string {
  return sha256Hex(previousHash + canonicalJson(event));
}
