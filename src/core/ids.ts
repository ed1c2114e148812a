/** Identifiers and one-time tokens. Ids carry a type prefix (`key_`, `run_`, `aud_`); tokens are 256-bit random. */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** A new id with a type prefix, e.g. `newId('key')` -> `key_3f9c...` (96 random bits, hex). */
export function newId(prefix: string): string {
  return `${prefix}_${randomBytes(12).toString('hex')}`;
}

/** A 256-bit random token, base64url, with an optional fixed prefix. Shown once; store only `sha256Hex` of it. */
export function newToken(prefix = ''): string {
  return prefix + randomBytes(32).toString('base64url');
}

export function sha256Hex(value: string | Buffer): string {
  return createHash('sha256').update(value).digest('hex');
}

/**
 * Constant-time string comparison. Both sides are hashed first so that the comparison time does not depend on
 * where the strings differ nor (beyond hashing) on their lengths.
 */
export function constantTimeEqual(a: string, b: string): boolean {
  const ha = createHash('sha256').update(a).digest();
  const hb = createHash('sha256').update(b).digest();
  return timingSafeEqual(ha, hb);
}
