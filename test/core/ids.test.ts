import assert from 'node:assert/strict';
import test from 'node:test';
import { secretMatcher } from '../../src/core/ids.ts';

test('a secret matcher accepts the secret and nothing else', () => {
  const isSecret = secretMatcher('bootstrap-token-0001');
  assert.equal(isSecret('bootstrap-token-0001'), true);
  for (const other of ['bootstrap-token-0002', 'bootstrap-token-000', 'bootstrap-token-00011', '', 'BOOTSTRAP-TOKEN-0001', 'bootstrap-token-0001 ']) {
    assert.equal(isSecret(other), false, JSON.stringify(other));
  }
  // Unicode is compared as its UTF-8 bytes, not as lookalike characters.
  assert.equal(secretMatcher('s\u00e9cret')('se\u0301cret'), false);
  assert.equal(secretMatcher('s\u00e9cret')('s\u00e9cret'), true);
});
