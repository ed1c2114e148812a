/**
 * Builds every domain service from the configuration and an open store. Shared by `svc serve`, the CLI's
 * in-process mode and the tests, so all three run the same code.
 */
import type { Config } from './config.ts';
import { systemClock, type Clock } from './core/clock.ts';
import { noteForOperator, writeForOperator } from './core/operator-note.ts';
import { createAuditRepository } from './audit/repo.ts';
import { createCacheRepository } from './caches/repo.ts';
import { createCacheService, createResponseCache, type CacheService } from './caches/service.ts';
import { createLedger, type Ledger } from './evidence/ledger.ts';
import { createInterruptedRuns, type InterruptedRuns } from './evidence/interrupted.ts';
import { createRunsRepository } from './evidence/repo.ts';
import { createRunsService, type RunsService } from './evidence/service.ts';
import { createRollupsRepository } from './evidence/rollups.ts';
import { createSavingsService, type SavingsService } from './evidence/savings.ts';
import { createGateway, type Gateway } from './gateway/pipeline.ts';
import { createAnswerBudget, type AnswerBudget } from './gateway/answer-budget.ts';
import { createRetentionService, type RetentionService } from './retention/service.ts';
import { createProviderRegistry } from './gateway/providers/registry.ts';
import { countTokens } from './gateway/tokens.ts';
import { createEmbeddingsService, type EmbeddingsService } from './gateway/embeddings.ts';
import type { ProviderRegistry } from './gateway/providers/types.ts';
import { createAuditService, type AuditService } from './audit/service.ts';
import { createHealthService, type HealthService } from './health/service.ts';
import { createIdentityService, type IdentityService } from './identity/service.ts';
import { createApiKeysRepository } from './keys/repo.ts';
import { createKeysService, type KeysService } from './keys/service.ts';
import { checkOutboundUrl } from './net/url-guard.ts';
import { createSecretCipher, loadMasterKey, type SecretCipher } from './secrets/vault-cipher.ts';
import { createSettingsRepository } from './settings/repo.ts';
import { auditRowView, createSettingsService, type PublicUrlCheck, type SettingsService } from './settings/service.ts';
import { DeferredWriteLosses } from './store/deferred-losses.ts';
import type { Store } from './store/store.ts';
import { createAccountsRepository } from './accounts/repo.ts';
import { createInvitesService, lapsedInvitesOfKey, type InvitesService } from './accounts/invites-service.ts';
import { createOrgsService, type OrgsService } from './accounts/orgs-service.ts';
import { createPasswordHasher, type PasswordHasher } from './accounts/passwords.ts';
import { createSessionsService, type AccountsDeps, type AccountsLog, type SessionsService } from './accounts/sessions-service.ts';
import { createSignupService, type SignupService } from './accounts/signup-service.ts';
import { createUsersService, type UsersService } from './accounts/users-service.ts';
import { consoleMailer, providerMailer, type Mailer } from './email/transport.ts';
import { createRateEventsRepository } from './limits/repo.ts';
import { createLimitsService, type LimitsService } from './limits/service.ts';
import { AppError } from './core/errors.ts';
import { ConfigError } from './config.ts';

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
  /** The upstream answers of gateway calls in progress, in total (SVC_GATEWAY_INFLIGHT_ANSWER_BYTES). */
  answers: AnswerBudget;
  ledger: Ledger;
  /** Runs an earlier process left running: `svc serve` finishes them as interrupted at start. */
  interruptedRuns: InterruptedRuns;
  runs: RunsService;
  savings: SavingsService;
  cache: CacheService;
  gateway: Gateway;
  retention: RetentionService;
  limits: LimitsService;
  sessions: SessionsService;
  users: UsersService;
  orgs: OrgsService;
  invites: InvitesService;
  signup: SignupService;
}

export interface ServiceOverrides {
  clock?: Clock;
  /** Replace the public-URL check (tests that must not touch DNS). */
  checkPublicUrl?: PublicUrlCheck;
  /** Replace the e-mail transport (tests capture messages). */
  mailer?: Mailer;
  /** Replace the password hasher (tests use a cheaper scrypt cost; production is N = 2^17). */
  passwordHasher?: PasswordHasher;
  /** Minimum time of a password-reset request (tests shorten it). */
  resetRequestFloorMs?: number;
  /** Where account warnings (failed e-mail deliveries) go; standard error by default. */
  log?: AccountsLog;
  /**
   * What the store tells of deferred writes lost to failed commits, for readiness: svc serve passes the one it opened
   * the store with; by default one nobody tells (no loss reported).
   */
  deferredWriteLosses?: DeferredWriteLosses;
}

const stderrLog: AccountsLog = {
  warn(message, error) {
    const cause = error instanceof Error ? `: ${error.message}` : '';
    noteForOperator(`${message}${cause}`);
  },
};

export async function createServices(config: Config, store: Store, overrides: ServiceOverrides = {}): Promise<Services> {
  const clock = overrides.clock ?? systemClock;
  const deferredWriteLosses = overrides.deferredWriteLosses ?? new DeferredWriteLosses();
  const accountsRepo = createAccountsRepository(store);
  await accountsRepo.ensureDefaultOrg(clock.now());

  const { key, source } = loadMasterKey(config.masterKey, config.dataDir);
  const cipher = createSecretCipher(key, source);
  const audit = createAuditService(createAuditRepository(store), clock, { view: auditRowView });
  const keysRepo = createApiKeysRepository(store);
  const keys = createKeysService({ repo: keysRepo, audit, clock, revokedAlso: lapsedInvitesOfKey({ audit, clock }) });
  const checkPublicUrl: PublicUrlCheck =
    overrides.checkPublicUrl ??
    (async (url, tenantId) => (await checkOutboundUrl(url, { allowPrivate: false, tenantId })).url.href);
  const settings = createSettingsService({
    repo: createSettingsRepository(store),
    keys,
    audit,
    cipher,
    checkPublicUrl,
    clock,
  });
  const limits = createLimitsService({ repo: createRateEventsRepository(store), clock });
  const log = overrides.log ?? stderrLog;
  const mailer: Mailer =
    overrides.mailer ??
    (config.accounts.email
      ? providerMailer({ ...config.accounts.email, from: config.accounts.emailFrom })
      : consoleMailer(writeForOperator, config.accounts.emailFrom));
  const accounts: AccountsDeps = {
    repo: accountsRepo,
    hasher: overrides.passwordHasher ?? createPasswordHasher(),
    clock,
    audit,
    limits,
    mailer,
    log,
    linkBaseUrl: () => config.accounts.linkBaseUrl,
    allowPublicSignup: config.accounts.allowPublicSignup,
  };
  const sessions = createSessionsService(accounts);
  const users = createUsersService(accounts);
  const invites = createInvitesService(accounts);
  const signup = createSignupService({ ...accounts, ...(overrides.resetRequestFloorMs !== undefined ? { floorMs: overrides.resetRequestFloorMs } : {}) });
  const identity = createIdentityService({
    bootstrapToken: config.auth.bootstrapToken,
    requireLogin: config.auth.requireLogin,
    allowOpenGateway: config.auth.allowOpenGateway,
    keys,
    // Cheap on every request: the repository keeps the answer in memory (src/accounts/repo.ts).
    loginModeActive: async () => (await accountsRepo.loginModeSince()) !== null,
    sessions: (token) => sessions.resolve(token),
    tenantExists: async (tenantId) => (await accountsRepo.findOrg(tenantId)) !== null,
    tenantDeleted: (tenantId) => audit.recordsDeletionOf(tenantId),
  });
  if (config.accounts.bootstrapAdmin) {
    try {
      await users.ensureBootstrapAdmin(config.accounts.bootstrapAdmin);
    } catch (error) {
      if (error instanceof AppError) throw new ConfigError(`invalid configuration: ${error.message}`);
      throw error;
    }
  }
  const health = createHealthService({
    config,
    clock,
    masterKeySource: source,
    undecryptableSecrets: (tenantId, limit) => settings.undecryptableSecrets(tenantId, limit),
    authMode: () => identity.mode(),
    isStoreOpen: () => store.isOpen,
    deferredWriteLosses: () => deferredWriteLosses.status(),
  });
  // The live answers in progress, bounded in total: counted by the providers, let go by the calls that hold them.
  const answers = createAnswerBudget(config.limits.gatewayInflightAnswerBytes);
  const providers = createProviderRegistry({ config, timeouts: config.providers.timeouts, answerBudget: answers });
  const embeddings = createEmbeddingsService({ providers, answers });
  const runsRepo = createRunsRepository(store);
  const ledger = createLedger({ repo: runsRepo, clock });
  const runs = createRunsService({ repo: runsRepo, clock, ledger, audit, countTokens, log });
  const interruptedRuns = createInterruptedRuns({ repo: runsRepo, clock });
  const savings = createSavingsService({ repo: createRollupsRepository(store), clock });
  const cacheRepo = createCacheRepository(store);
  const cache = createCacheService({ repo: cacheRepo, audit });
  const gateway = createGateway({ registry: providers, ledger, cache: createResponseCache(cacheRepo, { maxEntryBytes: config.limits.cacheEntryBytes }), clock, answers });
  const retention = createRetentionService({
    clock,
    tenantIds: () => accountsRepo.orgIds(),
    retentionDays: (tenantId) => settings.effectiveValue(tenantId, 'retention_days'),
    pruneRuns: (tenantId, cutoff, batch) => runsRepo.pruneTenantRuns(tenantId, cutoff, batch),
    pruneCache: (tenantId, cutoff, batch) => cacheRepo.pruneTenant(tenantId, cutoff, batch),
    pendingPurges: () => accountsRepo.pendingPurges(),
    finishPurge: (tenantId) => accountsRepo.finishPurge(tenantId),
    settle: () => store.flush(),
    holdsData: async (tenantId) => (await runsRepo.hasRuns(tenantId)) || (await cacheRepo.hasEntries(tenantId)),
    housekeeping: [(batch) => limits.prune(batch), (batch) => accountsRepo.pruneExpired(clock.now(), batch)],
  });
  const orgs = createOrgsService({
    ...accounts,
    hasRuns: (tenantId) => runsRepo.hasRuns(tenantId),
    onDeleted: () => {
      retention.purgeDeleted().catch((error) => log.warn('purging a deleted organization failed', error));
    },
  });
  return {
    config,
    store,
    clock,
    cipher,
    audit,
    keys,
    settings,
    identity,
    health,
    providers,
    embeddings,
    answers,
    ledger,
    interruptedRuns,
    runs,
    savings,
    cache,
    gateway,
    retention,
    limits,
    sessions,
    users,
    orgs,
    invites,
    signup,
  };
}
