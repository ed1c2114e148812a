/**
 * Password hashing and the password rules (docs/accounts.md, DESIGN.md section 5).
 *
 * scrypt from node:crypto at N = 2^17, r = 8, p = 1 with a 16-byte salt per hash, stored self-describing as
 * `scrypt$<log2 N>$<r>$<p>$<salt>$<key>` so the cost can be raised later (a weaker stored hash is reported by
 * `verify` as needing a re-hash). Each hash needs 128 MiB and ~0.3 s of a libuv thread, so at most `concurrency`
 * run at once and the rest queue: a login flood cannot exhaust memory. Unknown e-mails are verified against a dummy
 * hash of the same cost, so "no such user" and "wrong password" take the same time.
 *
 * Two lanes share the slots: `sign_in` (someone getting in: login, signup, a reset link, an invitation) goes before
 * `account` (a signed-in caller managing accounts: creating users, admin resets, changing a password). In one queue, an
 * org admin's 30 concurrent resets held every login ~8 s (~0.5 s a hash, two at a time); now a sign-in waits at most
 * for the hashes already running.
 */
import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { invalid } from '../core/errors.ts';

export const PASSWORD_MIN_LENGTH = 8;
export const PASSWORD_MAX_LENGTH = 256;

const SALT_BYTES = 16;
const KEY_BYTES = 32;

/** Whose hash it is (see the module's comment): sign-ins are served first. */
export type HashLane = 'sign_in' | 'account';

export interface PasswordHasher {
  hash(password: string, lane?: HashLane): Promise<string>;
  /** `ok` in constant time; `needsRehash` when the stored hash is weaker than the current parameters. */
  verify(password: string, stored: string, lane?: HashLane): Promise<{ ok: boolean; needsRehash: boolean }>;
  /** Spend the time of a verification without a stored hash (unknown accounts). */
  verifyDummy(password: string): Promise<void>;
}

export interface HasherOptions {
  /** log2 of scrypt's N; 17 in production. Tests pass a small value to stay fast. */
  costLog2?: number;
  /** Hashes computed at once (each holds 128 * N * r bytes). */
  concurrency?: number;
}

/**
 * The password as hashed: NFKC-normalized (the same password typed on different keyboards hashes the same), then
 * checked for length in code points. Never truncated.
 */
export function normalizePassword(password: string, field = 'password'): string {
  const normalized = password.normalize('NFKC');
  const length = [...normalized].length;
  if (length < PASSWORD_MIN_LENGTH || length > PASSWORD_MAX_LENGTH) {
    throw invalid(`${field} must be ${PASSWORD_MIN_LENGTH} to ${PASSWORD_MAX_LENGTH} characters long`, { param: field });
  }
  return normalized;
}

function derive(password: string, salt: Buffer, costLog2: number, r: number, p: number): Promise<Buffer> {
  const N = 2 ** costLog2;
  const options: ScryptOptions = { N, r, p, maxmem: 2 * 128 * N * r + 1024 * 1024 };
  return new Promise((resolve, reject) => {
    scrypt(password, salt, KEY_BYTES, options, (error, key) => (error ? reject(error) : resolve(key)));
  });
}

/**
 * A counting semaphore with two lanes: at most `limit` tasks run at once; the rest wait in arrival order, those of
 * the `sign_in` lane before any of the `account` lane.
 */
function limiter(limit: number) {
  let running = 0;
  const waiting: Record<HashLane, Array<() => void>> = { sign_in: [], account: [] };
  return async function run<T>(lane: HashLane, task: () => Promise<T>): Promise<T> {
    if (running >= limit) await new Promise<void>((resolve) => waiting[lane].push(resolve));
    else running += 1;
    try {
      return await task();
    } finally {
      // The slot passes straight to the next waiter, so a task arriving meanwhile cannot take it first.
      const next = waiting.sign_in.shift() ?? waiting.account.shift();
      if (next) next();
      else running -= 1;
    }
  };
}

interface ParsedHash {
  costLog2: number;
  r: number;
  p: number;
  salt: Buffer;
  key: Buffer;
}

function parse(stored: string): ParsedHash | null {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return null;
  const [costLog2, r, p] = parts.slice(1, 4).map(Number) as [number, number, number];
  if (![costLog2, r, p].every((n) => Number.isInteger(n) && n > 0) || costLog2 > 22) return null;
  return { costLog2, r, p, salt: Buffer.from(parts[4]!, 'base64url'), key: Buffer.from(parts[5]!, 'base64url') };
}

export function createPasswordHasher(options: HasherOptions = {}): PasswordHasher {
  const costLog2 = options.costLog2 ?? 17;
  const R = 8;
  const P = 1;
  const run = limiter(options.concurrency ?? 2);
  let dummy: Promise<string> | null = null;

  async function hash(password: string, lane: HashLane = 'sign_in'): Promise<string> {
    const salt = randomBytes(SALT_BYTES);
    const key = await run(lane, () => derive(password, salt, costLog2, R, P));
    return ['scrypt', costLog2, R, P, salt.toString('base64url'), key.toString('base64url')].join('$');
  }

  async function verify(password: string, stored: string, lane: HashLane = 'sign_in') {
    const parsed = parse(stored);
    if (!parsed) return { ok: false, needsRehash: false };
    const key = await run(lane, () => derive(password, parsed.salt, parsed.costLog2, parsed.r, parsed.p));
    const ok = key.length === parsed.key.length && timingSafeEqual(key, parsed.key);
    return { ok, needsRehash: ok && (parsed.costLog2 < costLog2 || parsed.r !== R || parsed.p !== P) };
  }

  return {
    hash,
    verify,
    async verifyDummy(password) {
      dummy ??= hash(randomBytes(16).toString('base64url'));
      await verify(password, await dummy);
    },
  };
}
