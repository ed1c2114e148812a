/** Identifiers and one-time tokens. Ids carry a type prefix (`key_`, `run_`, `aud_`); tokens are 256-bit random. */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Random bytes for ids come from a pool refilled 4 KiB at a time: one system call per ~340 ids instead of one per id
 * (a gateway request makes several). Tokens below never use the pool.
 */
const ID_POOL_BYTES = 4096;
let idPool = Buffer.alloc(0);
let idPoolOffset = 0;

function idBytes(count: number): Buffer {
  if (idPoolOffset + count > idPool.length) {
    idPool = randomBytes(ID_POOL_BYTES);
    idPoolOffset = 0;
  }
  const bytes = idPool.subarray(idPoolOffset, idPoolOffset + count);
  idPoolOffset += count;
  return bytes;
}

/** A new id with a type prefix, e.g. `newId('key')` -> `key_3f9c...` (96 random bits, hex). */
export function newId(prefix: string): string {
  return `${prefix}_${idBytes(12).toString('hex')}`;
}

/**
 * A new id whose hex part starts with the creation time (48-bit milliseconds, then 48 random bits), e.g.
 * `run_0193a1b2c3d4` + 12 random hex digits: same length and alphabet as `newId`, but ids of one table sort by
 * creation, so a table keyed by them (and every table keyed by its id) grows at its end instead of touching a random
 * page per insert.
 */
export function newTimeOrderedId(prefix: string, now = Date.now()): string {
  return `${prefix}_${Math.floor(now).toString(16).padStart(12, '0').slice(-12)}${idBytes(6).toString('hex')}`;
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
