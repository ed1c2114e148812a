/**
 * Builds every domain service from the configuration and an open store. Shared by `svc serve`, the CLI's
 * in-process mode and the tests, so all three run the same code.
 */
import type { Config } from './config.ts';
import { systemClock, type Clock } from './core/clock.ts';
import { createAuditRepository } from './audit/repo.ts';
import { createCacheRepository } from './caches/repo.ts';
import { createCacheService, createResponseCache, type CacheService } from './caches/service.ts';
import { createLedger, type Ledger } from './evidence/ledger.ts';
import { createRunsRepository } from './evidence/repo.ts';
import { createRunsService, type RunsService } from './evidence/service.ts';
import { createRollupsRepository } from './evidence/rollups.ts';
import { createSavingsService, type SavingsService } from './evidence/savings.ts';
import { createGateway, type Gateway } from './gateway/pipeline.ts';
import { createRetentionService, type RetentionService } from './retention/service.ts';
import { createProviderRegistry } from './gateway/providers/registry.ts';
import { countTokens } from './gateway/tokens.ts';
import { createEmbeddingsService, type EmbeddingsService } from './gateway/embeddings.ts';
import type { ProviderRegistry } from './gateway/providers/types.ts';
import { createAuditService, type AuditService } from './audit/service.ts';
import { createHealthService, type HealthService } from './health/service.ts';
import { createIdentityService, type IdentityService, type SessionResolver } from './identity/service.ts';
import { createApiKeysRepository } from './keys/repo.ts';
import { createKeysService, type KeysService } from './keys/service.ts';
import { checkOutboundUrl } from './net/url-guard.ts';
import { createSecretCipher, loadMasterKey, type SecretCipher } from './secrets/vault-cipher.ts';
import { createSettingsRepository } from './settings/repo.ts';
import { createSettingsService, type PublicUrlCheck, type SettingsService } from './settings/service.ts';
import type { Store } from './store/store.ts';
import { createTenantsRepository } from './tenants/repo.ts';

export interface Services {
  config: Config;
  store: Store;
  clock: Clock;
  cipher: SecretCipher;
  audit: AuditService;
  keys: KeysService;
  settings: SettingsService;
  identity: IdentityService;
  health: HealthService;
  providers: ProviderRegistry;
  embeddings: EmbeddingsService;
  ledger: Ledger;
  runs: RunsService;
  savings: SavingsService;
  cache: CacheService;
  gateway: Gateway;
  retention: RetentionService;
}

export interface ServiceOverrides {
  clock?: Clock;
  /** Replace the public-URL check (tests that must not touch DNS). */
  checkPublicUrl?: PublicUrlCheck;
  countUsers?: () => Promise<number>;
  sessions?: SessionResolver;
}

export async function createServices(config: Config, store: Store, overrides: ServiceOverrides = {}): Promise<Services> {
  const clock = overrides.clock ?? systemClock;
  const tenants = createTenantsRepository(store);
  await tenants.ensureDefault(clock.now());

  const { key, source } = loadMasterKey(config.masterKey, config.dataDir);
  const cipher = createSecretCipher(key, source);
  const audit = createAuditService(createAuditRepository(store), clock);
  const keysRepo = createApiKeysRepository(store);
  const keys = createKeysService({ repo: keysRepo, audit, clock });
  const checkPublicUrl: PublicUrlCheck =
    overrides.checkPublicUrl ??
    (async (url) => {
      await checkOutboundUrl(url, { allowPrivate: false });
    });
  const settings = createSettingsService({
    repo: createSettingsRepository(store),
    keys,
    audit,
    cipher,
    checkPublicUrl,
    clock,
  });
  const identity = createIdentityService({
    bootstrapToken: config.auth.bootstrapToken,
    requireLogin: config.auth.requireLogin,
    allowOpenGateway: config.auth.allowOpenGateway,
    keys,
    countUsers: overrides.countUsers ?? (async () => 0),
    ...(overrides.sessions ? { sessions: overrides.sessions } : {}),
  });
  const health = createHealthService({
    config,
    clock,
    masterKeySource: source,
    authMode: () => identity.mode(),
    isStoreOpen: () => store.isOpen,
  });
  const providers = createProviderRegistry({ config, timeouts: config.providers.timeouts });
  const embeddings = createEmbeddingsService({ providers });
  const runsRepo = createRunsRepository(store);
  const ledger = createLedger({ repo: runsRepo, clock });
  const runs = createRunsService({ repo: runsRepo, clock, ledger, audit, countTokens });
  const savings = createSavingsService({ repo: createRollupsRepository(store), clock });
  const cacheRepo = createCacheRepository(store);
  const cache = createCacheService({ repo: cacheRepo, audit });
  const gateway = createGateway({ registry: providers, ledger, cache: createResponseCache(cacheRepo), clock });
  const retention = createRetentionService({
    clock,
    tenantIds: () => tenants.listIds(),
    retentionDays: async (tenantId) => (await settings.effective(tenantId)).retention_days,
    pruneRuns: (tenantId, cutoff, batch) => runsRepo.pruneTenantRuns(tenantId, cutoff, batch),
    pruneCache: (tenantId, cutoff, batch) => cacheRepo.pruneTenant(tenantId, cutoff, batch),
  });
  return { config, store, clock, cipher, audit, keys, settings, identity, health, providers, embeddings, ledger, runs, savings, cache, gateway, retention };
}
