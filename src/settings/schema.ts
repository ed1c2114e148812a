/**
 * The tenant settings table of SPEC 2.4: each key's validator and default. One key is set at a time; an unknown
 * key is a 400. Secret keys are stored encrypted and read back as the literal `[set]`.
 */
import { z } from 'zod';
import { isPrintableText, UNPRINTABLE_MESSAGE } from '../core/text.ts';

/**
 * A string setting of 1 to `max` characters shown back in settings, the audit log, the CLI and the dashboard: no
 * control characters or bidirectional overrides (model names, ids, URLs have none).
 */
const printable = (max: number) => z.string().min(1).max(max).refine(isPrintableText, { message: UNPRINTABLE_MESSAGE });

const positiveNumber = z.number().finite().positive();
const mapOfStrings = z.record(printable(200), printable(200)).refine((map) => Object.keys(map).length <= 500, 'at most 500 substitutions');

const idList = z.array(printable(200)).max(200);

/** The longest `webhook_url`, as given and as stored (serialised by the URL check, settings/service.ts). */
export const WEBHOOK_URL_MAX = 2048;

export const connectorGrantSchema = z
  .object({
    keyIds: z.array(printable(100)).min(1).max(100),
    appId: printable(200),
    agentId: printable(200),
    subject: printable(200),
    serverIds: idList.optional(),
    connectorIds: idList.optional(),
    tools: z.array(printable(300)).min(1).max(1000),
  })
  .strict()
  .refine((grant) => (grant.serverIds?.length ?? 0) > 0 || (grant.connectorIds?.length ?? 0) > 0, {
    message: 'each grant needs at least one of serverIds or connectorIds',
  });

export const connectorGrantsSchema = z
  .object({ version: z.literal(1), grants: z.array(connectorGrantSchema).max(500) })
  .strict();

export type ConnectorGrants = z.infer<typeof connectorGrantsSchema>;

/**
 * `actedOn`: the settings this build acts on. The others are SPEC 2.4's settings of features not built yet (webhook
 * delivery, approvals, canaries, model substitutions, the semantic cache, tripwires, DLP, memory quarantine, shared
 * learning, managed connectors): validated, stored, audited and returned, so a tenant's configuration survives until
 * the feature reads it, but changing nothing meanwhile (docs/api.md says so; `svc settings set` notes it).
 */
export const SETTINGS = {
  retention_days: { schema: positiveNumber, default: 30, actedOn: true },
  redaction: { schema: z.boolean(), default: false },
  // Empty (after trimming) clears it (settings/service.ts), so no minimum length here.
  webhook_url: { schema: z.string().max(WEBHOOK_URL_MAX).refine(isPrintableText, { message: UNPRINTABLE_MESSAGE }).nullable(), default: null },
  webhook_secret: { schema: z.string().min(1).max(4096).nullable(), default: null, secret: true },
  approval_exception_ttl_hours: { schema: positiveNumber, default: 24 },
  canary_enabled: { schema: z.boolean(), default: false },
  model_substitutions: { schema: mapOfStrings, default: {} },
  model_substitution_enabled: { schema: z.boolean(), default: false },
  model_substitution_reference_holdout_bps: { schema: z.number().int().min(0).max(10_000), default: 200 },
  model_substitution_reference_max_cadence: { schema: z.number().int().positive(), default: 50 },
  semantic_cache: { schema: z.enum(['off', 'shadow', 'serve']), default: 'off' },
  tripwire_action: { schema: z.enum(['alert', 'block']), default: 'alert' },
  streaming_dlp: { schema: z.boolean(), default: false },
  memory_quarantine: { schema: z.boolean(), default: false },
  memory_quarantine_min_level: { schema: z.number().int().min(0).max(4), default: 3 },
  cross_tenant_learning: { schema: z.boolean(), default: false },
  managed_connector_grants: { schema: connectorGrantsSchema, default: { version: 1, grants: [] } },
} as const satisfies Record<string, { schema: z.ZodType; default: unknown; secret?: boolean; actedOn?: boolean }>;

export type SettingKey = keyof typeof SETTINGS;
export type SettingsMap = { [K in SettingKey]: z.infer<(typeof SETTINGS)[K]['schema']> };

export const SETTING_KEYS = Object.keys(SETTINGS) as SettingKey[];
export const SECRET_MASK = '[set]';

export function isSettingKey(key: string): key is SettingKey {
  return Object.hasOwn(SETTINGS, key);
}

export function isSecretSetting(key: SettingKey): boolean {
  return 'secret' in SETTINGS[key] && SETTINGS[key].secret === true;
}

/** Whether this build acts on `key` (SETTINGS says which it does not, and why they are kept). */
export function isSettingActedOn(key: SettingKey): boolean {
  return 'actedOn' in SETTINGS[key] && SETTINGS[key].actedOn === true;
}

export function defaultSettings(): SettingsMap {
  return Object.fromEntries(SETTING_KEYS.map((key) => [key, structuredClone(SETTINGS[key].default)])) as SettingsMap;
}
