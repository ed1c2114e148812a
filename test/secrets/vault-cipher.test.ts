/** The master key (env, key file, ephemeral) and AES-256-GCM of secrets at rest. */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'node:test';
import { createSecretCipher, loadMasterKey, MASTER_KEY_FILE } from '../../src/secrets/vault-cipher.ts';
import { tempDir } from '../support/process.ts';

test('the key file is created once (64 hex characters, mode 0600, nothing else left behind) and read back on the next start', (t) => {
  const dataDir = tempDir(t);
  const first = loadMasterKey(null, dataDir);
  assert.equal(first.source, 'key_file');
  const path = join(dataDir, MASTER_KEY_FILE);
  assert.match(readFileSync(path, 'utf8'), /^[0-9a-f]{64}$/);
  assert.equal(statSync(path).mode & 0o777, 0o600);
  assert.deepEqual(readdirSync(dataDir), [MASTER_KEY_FILE]);
  assert.deepEqual(loadMasterKey(null, dataDir).key, first.key);
  // A key written by hand with a trailing newline is the same key.
  writeFileSync(path, `${first.key.toString('hex').toUpperCase()}\n`);
  assert.deepEqual(loadMasterKey(null, dataDir).key, first.key);
});

test('a key file that does not hold 64 hex characters (empty, cut, anything else) is refused, not stretched into a key anyone can compute', (t) => {
  const dataDir = tempDir(t);
  const path = join(dataDir, MASTER_KEY_FILE);
  for (const content of ['', '\n', 'abc', 'a'.repeat(63), 'z'.repeat(64), 'passphrase', Buffer.alloc(32).toString('base64')]) {
    writeFileSync(path, content);
    assert.throws(() => loadMasterKey(null, dataDir), /does not hold 64 hex characters/, JSON.stringify(content));
    assert.equal(readFileSync(path, 'utf8'), content, 'the file is left as it was');
  }
});

test('SVC_MASTER_KEY: hex and base64 are the raw 32 bytes, another string is stretched; no data directory gives an ephemeral key', () => {
  const raw = Buffer.alloc(32, 7);
  assert.deepEqual(loadMasterKey(raw.toString('hex'), null).key, raw);
  assert.deepEqual(loadMasterKey(raw.toString('base64'), null).key, raw);
  const stretched = loadMasterKey('a long passphrase', null);
  assert.equal(stretched.source, 'env');
  assert.equal(stretched.key.length, 32);
  const ephemeral = loadMasterKey(null, null);
  assert.equal(ephemeral.source, 'ephemeral');
  assert.notDeepEqual(ephemeral.key, loadMasterKey(null, null).key);
});

test('a secret encrypts to a new ciphertext each time, decrypts under its key only, and a changed byte is refused', () => {
  const cipher = createSecretCipher(Buffer.alloc(32, 1), 'env');
  const sealed = cipher.encrypt('whsec-very-secret');
  assert.notEqual(sealed, cipher.encrypt('whsec-very-secret'));
  assert.ok(!sealed.includes('whsec'));
  assert.equal(cipher.decrypt(sealed), 'whsec-very-secret');
  assert.throws(() => createSecretCipher(Buffer.alloc(32, 2), 'env').decrypt(sealed));
  const [version, iv, tag, data] = sealed.split(':');
  const flipped = Buffer.from(data!, 'base64url');
  flipped.writeUInt8(flipped.readUInt8(0) ^ 1, 0);
  assert.throws(() => cipher.decrypt([version, iv, tag, flipped.toString('base64url')].join(':')));
  assert.throws(() => cipher.decrypt('v2:x:y:z'), /unrecognised/);
  assert.throws(() => createSecretCipher(Buffer.alloc(16), 'env'), /32 bytes/);
});
