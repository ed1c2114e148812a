/** Identifiers and one-time tokens. Ids carry a type prefix (`key_`, `run_`, `aud_`); tokens are 256-bit random. */
import { hash, randomBytes, timingSafeEqual } from 'node:crypto';

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
 * A new id whose hex part starts with the creation time (48-bit milliseconds, then a 48-bit random number), e.g.
 * `run_0193a1b2c3d4` + 12 hex digits: same length and alphabet as `newId`, but the ids of one process sort by
 * creation, so a table keyed by them grows at its end instead of touching a random page per insert. Within one
 * millisecond (or if the clock steps back) the previous id's random part is incremented, as monotonic ULIDs do.
 */
export function newTimeOrderedId(prefix: string, now = Date.now()): string {
  let time = Math.floor(now);
  let random: number;
  if (time <= lastOrdered.time) {
    time = lastOrdered.time;
    // A random step, not +1: ids stay in order without being guessable from their neighbour.
    random = lastOrdered.random + 1 + idBytes(2).readUInt16BE(0);
    if (random >= 2 ** 48) {
      time += 1;
      random = Math.floor(idBytes(6).readUIntBE(0, 6) / 2);
    }
  } else {
    // The top bit stays clear, leaving room to count up within the millisecond.
    random = Math.floor(idBytes(6).readUIntBE(0, 6) / 2);
  }
  lastOrdered.time = time;
  lastOrdered.random = random;
  return `${prefix}_${time.toString(16).padStart(12, '0')}${random.toString(16).padStart(12, '0')}`;
}

const lastOrdered = { time: 0, random: 0 };

/** A 256-bit random token, base64url, with an optional fixed prefix. Shown once; store only `sha256Hex` of it. */
export function newToken(prefix = ''): string {
  return prefix + randomBytes(32).toString('base64url');
}

/** sha256 in hex; node's one-shot `crypto.hash` is about twice as fast as a Hash object for the short inputs here. */
export function sha256Hex(value: string | Buffer): string {
  return hash('sha256', value, 'hex');
}

/**
 * A constant-time test of presented strings against one secret, by their hashes (`sha256Hex` of the presented
 * string: the caller hashes it once, and a gateway request's bearer token is tested against the bootstrap token and
 * then looked up among the API keys by that same hash), so that the comparison time depends neither on where the
 * strings differ nor (beyond hashing) on their lengths. Made once per secret; the comparison writes the presented hash
 * into a buffer of its own rather than allocating one per call (JavaScript runs one call at a time).
 */
export function secretMatcher(secret: string): (presentedHash: string) => boolean {
  const expected = hash('sha256', secret, 'buffer');
  const presented = Buffer.alloc(expected.length);
  return (presentedHash) => {
    // Anything but 64 hex digits is refused before decoding: node's hex decoder reads only the low byte of each
    // character, so 'Ť' (U+0164) would pass for 'd'.
    if (!SHA256_HEX.test(presentedHash)) return false;
    presented.write(presentedHash, 'hex');
    return timingSafeEqual(presented, expected);
  };
}

const SHA256_HEX = /^[0-9a-f]{64}$/;
