import assert from 'node:assert/strict';
import test from 'node:test';
import { secretMatcher, sha256Hex } from '../../src/core/ids.ts';

test('a secret matcher accepts the hash of the secret and nothing else', () => {
  const isSecret = secretMatcher('bootstrap-token-0001');
  assert.equal(isSecret(sha256Hex('bootstrap-token-0001')), true);
  assert.equal(isSecret(sha256Hex('bootstrap-token-0001')), true, 'again: the matcher reuses its buffer');
  for (const other of ['bootstrap-token-0002', 'bootstrap-token-000', 'bootstrap-token-00011', '', 'BOOTSTRAP-TOKEN-0001', 'bootstrap-token-0001 ']) {
    assert.equal(isSecret(sha256Hex(other)), false, JSON.stringify(other));
  }
  // Unicode is compared as its UTF-8 bytes, not as lookalike characters.
  assert.equal(secretMatcher('s\u00e9cret')(sha256Hex('se\u0301cret')), false);
  assert.equal(secretMatcher('s\u00e9cret')(sha256Hex('s\u00e9cret')), true);
  // The secret itself, or anything not its hash, is refused: another length, non-hex characters (also where their
  // low byte would spell the right digit).
  const hash = sha256Hex('bootstrap-token-0001');
  const lookalike = hash.replace(/[a-f]/, (digit) => String.fromCharCode(0x100 + digit.charCodeAt(0)));
  for (const other of ['bootstrap-token-0001', hash.slice(0, 63), `${hash}0`, `${hash.slice(0, 62)}zz`, lookalike, '']) {
    assert.equal(isSecret(other), false, JSON.stringify(other));
  }
});
