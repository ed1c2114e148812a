/**
 * Header fields a request may carry once only: `Host` (RFC 9112 section 3.2: more than one is a 400), the credentials
 * (`Authorization`, `x-api-key`), the identity headers (SPEC 5.3, and `X-Svc-Tenant`) and `Content-Type`. node keeps
 * the first `Authorization`, `Host` and `Content-Type` and drops the others without a word, and joins repeated
 * `x-api-key` or `X-Svc-*` values with ", ": which credential, app or body type svc acted on depended on the order, and
 * an intermediary reading the last one would see another caller (or body) than svc. svc refuses the request instead
 * (docs/api.md).
 *
 * Checked on every request, so without allocating: one pass over node's `rawHeaders`, names compared by length first.
 */

/** The names, lowercase; a request's bit i stands for SINGULAR[i]. */
const SINGULAR = ['host', 'authorization', 'x-api-key', 'x-svc-app', 'x-svc-agent', 'x-svc-subject', 'x-svc-tenant', 'content-type'] as const;

/** The indexes into SINGULAR of the names of each length. */
const BY_LENGTH: number[][] = [];
SINGULAR.forEach((name, index) => (BY_LENGTH[name.length] ??= []).push(index));

/**
 * Whether header name `raw` is `lower` in any case. `| 0x20` lowercases an ASCII letter and leaves `-` as it is; the
 * only other byte it would take to `-` is CR, which no header name holds (the parser refuses it).
 */
function sameName(raw: string, lower: string): boolean {
  for (let i = 0; i < lower.length; i += 1) if ((raw.charCodeAt(i) | 0x20) !== lower.charCodeAt(i)) return false;
  return true;
}

/** The lowercase name of the first singular header that `rawHeaders` (node's name, value, name, ... list) repeats, or null. */
export function repeatedSingularHeader(rawHeaders: readonly string[]): string | null {
  let seen = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!;
    const candidates = BY_LENGTH[name.length];
    if (candidates === undefined) continue;
    for (let c = 0; c < candidates.length; c += 1) {
      const index = candidates[c]!;
      if (!sameName(name, SINGULAR[index]!)) continue;
      const bit = 1 << index;
      if ((seen & bit) !== 0) return SINGULAR[index]!;
      seen |= bit;
      break;
    }
  }
  return null;
}
