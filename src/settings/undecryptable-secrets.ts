/**
 * Stored secrets that the current master key does not decrypt: what is left when svc starts under another key
 * (SVC_MASTER_KEY changed, a data directory restored without its master.key). Settings still read them as `[set]`
 * (src/settings/service.ts), so nothing else would tell the operator; readiness item `vault` and `svc serve`'s start
 * say it from this count (docs/configuration.md "Master key").
 *
 * Decrypting is the only test there is (no fingerprint of the key is stored): ~20-40 us a secret, so every caller
 * bounds how many it checks.
 */
import type { SecretCipher } from '../secrets/vault-cipher.ts';
import type { SettingsRepository } from './repo.ts';

export interface UndecryptableSecrets {
  /** Secrets, among those checked, that do not decrypt. */
  secrets: number;
  /** Organizations those belong to. */
  tenants: number;
  /** False when there were more stored secrets than the bound: the counts are then a lower bound. */
  complete: boolean;
  /** How many stored secrets were checked. */
  checked: number;
}

/** Check at most `limit` stored secrets of `tenantId`, or of every organization (null). */
export async function findUndecryptableSecrets(
  deps: { repo: Pick<SettingsRepository, 'storedSecrets'>; cipher: Pick<SecretCipher, 'decrypt'> },
  tenantId: string | null,
  limit: number,
): Promise<UndecryptableSecrets> {
  // One more than the bound: whether there are more than it says, without checking that one.
  const stored = await deps.repo.storedSecrets(tenantId, limit + 1);
  const checked = stored.slice(0, limit);
  const tenants = new Set<string>();
  let secrets = 0;
  for (const { tenantId: owner, ciphertext } of checked) {
    try {
      deps.cipher.decrypt(ciphertext);
    } catch {
      secrets += 1;
      tenants.add(owner);
    }
  }
  return { secrets, tenants: tenants.size, complete: stored.length <= limit, checked: checked.length };
}

/**
 * "2 stored secret(s) of 2 organization(s) do not decrypt under the current master key": counts only, never a
 * secret, its ciphertext or its organization's id (an organization's admin may read readiness).
 */
export function describeUndecryptable(found: UndecryptableSecrets): string {
  const bound = found.complete ? '' : ` (at least: only the first ${found.checked} stored secrets were checked)`;
  return `${found.secrets} stored secret(s) of ${found.tenants} organization(s) do not decrypt under the current master key${bound}`;
}

/** What the operator can do about it. */
export const UNDECRYPTABLE_ACTION =
  'Restore the master key they were stored under (SVC_MASTER_KEY, or master.key in the data directory), or set them ' +
  'again (PUT /api/v1/settings, svc settings set: webhook_secret) to store them under the current key.';
