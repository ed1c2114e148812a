/**
 * Encryption of secret values at rest (settings such as `webhook_secret`, and later the credential vault):
 * AES-256-GCM under a 256-bit master key. The key comes from `SVC_MASTER_KEY` or, when unset, from a key file
 * created with mode 0600 in the data directory. Ciphertexts are self-describing (`v1:<iv>:<tag>:<data>`,
 * base64url) so the format can evolve.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { chmodSync, closeSync, fsyncSync, linkSync, openSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { temporaryName, writeNewPrivateFile } from '../core/private-file.ts';
import { dataDirFailure } from '../store/data-dir.ts';

export const MASTER_KEY_FILE = 'master.key';

/** Where the master key came from; readiness reports it. */
export type MasterKeySource = 'env' | 'key_file' | 'ephemeral';

export interface SecretCipher {
  readonly source: MasterKeySource;
  encrypt(plaintext: string): string;
  decrypt(ciphertext: string): string;
}

/**
 * Resolve the master key: SVC_MASTER_KEY (64 hex chars or 44 base64 chars are used as raw 32 bytes; any other
 * string is stretched with sha256), else `<dataDir>/master.key` (created on first use), else an ephemeral key for
 * in-memory stores.
 */
export function loadMasterKey(masterKey: string | null, dataDir: string | null): { key: Buffer; source: MasterKeySource } {
  if (masterKey) return { key: keyFromString(masterKey), source: 'env' };
  if (!dataDir) return { key: randomBytes(32), source: 'ephemeral' };
  const path = join(dataDir, MASTER_KEY_FILE);
  try {
    return { key: keyFromFile(path, readFileSync(path, 'utf8')), source: 'key_file' };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw dataDirFailure(error, `cannot read the master key ${path}`);
  }
  const key = randomBytes(32);
  try {
    if (!linkNewKeyFile(path, key)) return { key: keyFromFile(path, readFileSync(path, 'utf8')), source: 'key_file' };
  } catch (error) {
    // A full disk or a file size limit said in words, the file named, rather than node's `EFBIG: file too large, write`.
    throw dataDirFailure(error, `cannot write the master key ${path}`);
  }
  return { key, source: 'key_file' };
}

/**
 * Write `key` to `path` whole, through a private temporary file linked into place: the key file never exists empty or
 * half written (a crash between creating and writing it would leave one), and of two processes creating it at once
 * one links first and the other reads its key. False if another process's key file was there first.
 */
function linkNewKeyFile(path: string, key: Buffer): boolean {
  const temp = temporaryName(path);
  writeNewPrivateFile(temp, key.toString('hex'));
  try {
    chmodSync(temp, 0o600); // in case a umask widened it
    fsyncFile(temp);
    linkSync(temp, path);
    fsyncFile(dirname(path)); // the link itself, so that a crash cannot take the key from under secrets already stored
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return false;
  } finally {
    rmSync(temp, { force: true });
  }
}

/**
 * The key file holds exactly what svc writes: 64 hex characters (a trailing newline allowed). Anything else is
 * refused rather than stretched into a key: an empty or cut file would otherwise give a key anyone can compute.
 */
function keyFromFile(path: string, content: string): Buffer {
  const value = content.trim();
  if (!/^[0-9a-f]{64}$/i.test(value)) {
    throw new Error(`the master key file ${path} does not hold 64 hex characters; restore it from a backup (secrets stored under it cannot be read without it), or remove it if no secret was ever stored`);
  }
  return Buffer.from(value, 'hex');
}

/** fsync a file or a directory (Linux opens both read-only for it). */
function fsyncFile(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

function keyFromString(value: string): Buffer {
  if (/^[0-9a-f]{64}$/i.test(value)) return Buffer.from(value, 'hex');
  const b64 = Buffer.from(value, 'base64');
  if (b64.length === 32 && /^[A-Za-z0-9+/_-]{43}=?$/.test(value)) return b64;
  return createHash('sha256').update(value).digest();
}

export function createSecretCipher(key: Buffer, source: MasterKeySource): SecretCipher {
  if (key.length !== 32) throw new Error('master key must be 32 bytes');
  return {
    source,
    encrypt(plaintext) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      const data = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      const tag = cipher.getAuthTag();
      return ['v1', iv.toString('base64url'), tag.toString('base64url'), data.toString('base64url')].join(':');
    },
    decrypt(ciphertext) {
      const [version, iv, tag, data] = ciphertext.split(':');
      if (version !== 'v1' || !iv || !tag || data === undefined) throw new Error('unrecognised ciphertext');
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]).toString('utf8');
    },
  };
}
