/** Assertions on the failures providers throw (src/gateway/providers/types.ts `ProviderError`). */
import assert from 'node:assert/strict';
import { ProviderError } from '../../src/gateway/providers/types.ts';

/** `promise` rejects with a ProviderError of `kind`; returns it. */
export async function rejectsWith(promise: Promise<unknown>, kind: ProviderError['kind']): Promise<ProviderError> {
  let caught: unknown;
  try {
    await promise;
  } catch (error) {
    caught = error;
  }
  assert.ok(caught instanceof ProviderError, `expected a ProviderError, got ${String(caught)}`);
  assert.equal(caught.kind, kind, caught.message);
  return caught;
}
