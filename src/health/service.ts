/**
 * Health (public, SPEC 4.1) and readiness (admin): readiness items are computed from the live configuration,
 * so an operator sees what still needs attention before exposing svc.
 */
import type { Config } from '../config.ts';
import type { Clock } from '../core/clock.ts';
import type { AuthMode } from '../identity/service.ts';
import type { MasterKeySource } from '../secrets/vault-cipher.ts';
import { TRIAL_DAYS, TRIAL_PLAN } from '../accounts/signup-service.ts';
import type { DeferredLossStatus } from '../store/deferred-losses.ts';
import { describeUndecryptable, UNDECRYPTABLE_ACTION, type UndecryptableSecrets } from '../settings/undecryptable-secrets.ts';

export interface Health {
  ok: boolean;
  version: string;
  provider: string;
  webAdapter: boolean;
  publicSignup: boolean;
  selfServeTrial: { enabled: boolean; days: number; plan: string };
}

export type ReadinessStatus = 'ready' | 'attention' | 'info';

export interface ReadinessItem {
  id: string;
  label: string;
  status: ReadinessStatus;
  message: string;
  action: string | null;
  actionHref: string | null;
  docsHref: string;
}

export interface Readiness {
  generatedAt: number;
  summary: { ready: number; attention: number; info: number; publicReady: boolean };
  items: ReadinessItem[];
}

export interface HealthService {
  health(): Health;
  /**
   * The items as the admin of `tenantId` sees them (their organization's stored secrets in item `vault`), or the
   * platform's operator (null: every organization's).
   */
  readiness(tenantId: string | null): Promise<Readiness>;
}

/**
 * How many stored secrets one readiness read decrypts at most, to find those of another master key: ~20-40 us each,
 * so at most ~0.4 s for a platform operator's read of a data file with more (an organization holds one).
 */
export const READINESS_SECRETS_CHECKED = 10_000;

/** Which live providers are configured, in a stable order; empty means the deterministic mock answers. */
export function liveProviders(config: Config): string[] {
  const live: string[] = [];
  if (config.providers.chatCompletions.apiKey) live.push('chat-completions');
  if (config.providers.messages.apiKey) live.push('messages');
  return live;
}

/** "3 run ledger, 12 cache entries": what a streak of failed commits lost, by kind. */
function kindsOf(kinds: Record<string, number>): string {
  return Object.entries(kinds)
    .map(([kind, count]) => `${count} ${kind}`)
    .join(', ');
}

/**
 * Item `storage`: attention while commits of the data file fail (refusing management writes, losing deferred writes:
 * answered requests' run ledger, cache entries) or drop deferred writes that failed alone, info once they succeed
 * again (what the last streak lost), ready if none failed.
 */
function storageItem(
  losses: DeferredLossStatus,
  item: (id: string, label: string, status: ReadinessStatus, message: string, action?: string | null) => ReadinessItem,
): ReadinessItem {
  const label = 'Data file commits';
  const { streak } = losses;
  if (streak === null) {
    return item('storage', label, 'ready', 'No commit of the data file has failed, and no deferred write has been lost, since svc started.');
  }
  const lost = `${streak.lostWrites} deferred write(s) of answered requests` + (streak.lostWrites > 0 ? ` (${kindsOf(streak.kinds)})` : '');
  const how =
    `${streak.failedCommits} failed commit(s), ${streak.droppedAlone} write(s) failed alone, ` +
    `${streak.refusedWrites} management write(s) answered with an error`;
  if (streak.endedAt === null) {
    return item('storage', label, 'attention',
      `Commits of the data file fail or lose deferred writes since ${new Date(streak.since).toISOString()}: ${lost} lost so far ` +
        `(${how}); SQLite said: ${streak.error}.`,
      "Free space on the data directory's file system or fix its I/O errors (a write failing alone on a constraint " +
        'is a fault of svc: report it); svc commits again by itself.');
  }
  return item('storage', label, 'info',
    `Commits of the data file lost deferred writes from ${new Date(streak.since).toISOString()} to ${new Date(streak.endedAt).toISOString()}: ` +
      `${lost} (${how}; SQLite said: ${streak.error}). They succeed again.`);
}

/**
 * Item `vault`: attention while stored secrets do not decrypt under the current key (svc started under another one)
 * or the key is in memory only; else how the key is kept.
 */
function vaultItem(
  source: MasterKeySource,
  undecryptable: UndecryptableSecrets | null,
  item: (id: string, label: string, status: ReadinessStatus, message: string, action?: string | null) => ReadinessItem,
): ReadinessItem {
  const label = 'Credential vault encryption';
  if (source === 'ephemeral') return item('vault', label, 'attention', 'An ephemeral in-memory key: stored secrets will not survive a restart.');
  if (undecryptable !== null && undecryptable.secrets > 0) {
    return item('vault', label, 'attention',
      `${describeUndecryptable(undecryptable)}: svc was started under another key (now ` +
        `${source === 'env' ? 'SVC_MASTER_KEY' : 'the master.key file'}) than they were stored under. They read [set] but cannot be used.`,
      UNDECRYPTABLE_ACTION);
  }
  return source === 'env'
    ? item('vault', label, 'ready', 'Secrets are encrypted with AES-256-GCM under SVC_MASTER_KEY.')
    : item('vault', label, 'info',
        'Secrets are encrypted with AES-256-GCM under a key file (mode 0600) in the data directory; a backup of the directory carries the key.',
        'Set SVC_MASTER_KEY to keep the key apart from the data.');
}

export function createHealthService(deps: {
  config: Config;
  clock: Clock;
  masterKeySource: MasterKeySource;
  /** Of the first `limit` stored secrets of an organization (all: null), those the master key does not decrypt. */
  undecryptableSecrets: (tenantId: string | null, limit: number) => Promise<UndecryptableSecrets>;
  authMode: () => Promise<AuthMode>;
  isStoreOpen: () => boolean;
  /** Deferred writes lost to failed commits (src/store/deferred-losses.ts): readiness item `storage`. */
  deferredWriteLosses: () => DeferredLossStatus;
}): HealthService {
  const { config, clock } = deps;
  const live = liveProviders(config);

  return {
    health() {
      const publicSignup = config.accounts.allowPublicSignup;
      return {
        ok: deps.isStoreOpen(),
        version: config.version,
        provider: live.length ? live.join('+') : 'mock',
        webAdapter: false,
        publicSignup,
        selfServeTrial: { enabled: publicSignup, days: TRIAL_DAYS, plan: TRIAL_PLAN },
      };
    },

    async readiness(tenantId) {
      const mode = await deps.authMode();
      // An in-memory key has no secrets of an earlier one to find.
      const undecryptable =
        deps.masterKeySource === 'ephemeral' ? null : await deps.undecryptableSecrets(tenantId, READINESS_SECRETS_CHECKED);
      const item = (
        id: string,
        label: string,
        status: ReadinessStatus,
        message: string,
        action: string | null = null,
        actionHref: string | null = null,
      ): ReadinessItem => ({ id, label, status, message, action, actionHref, docsHref: `/docs/configuration#${id}` });

      const items: ReadinessItem[] = [
        mode === 'open'
          ? item('auth', 'Dashboard and API authentication', 'attention',
              'Open dev mode: every caller is an admin of the default tenant.',
              'Set SVC_API_KEY, create the first user (SVC_ADMIN_EMAIL/SVC_ADMIN_PASSWORD) or set SVC_REQUIRE_LOGIN=true.')
          : config.auth.allowOpenGateway
            ? item('auth', 'Dashboard and API authentication', 'attention',
                `${mode === 'login' ? 'Login' : 'Protected'} mode, but SVC_ALLOW_OPEN_GATEWAY=true lets unauthenticated gateway traffic in.`,
                'Unset SVC_ALLOW_OPEN_GATEWAY outside development.')
            : item('auth', 'Dashboard and API authentication', 'ready',
                mode === 'login' ? 'Login mode: the dashboard needs a session and agents use API keys.' : 'Protected mode: a bearer token is required.'),
        vaultItem(deps.masterKeySource, undecryptable, item),
        live.length
          ? item('provider', 'Live provider', 'ready', `Live provider configured: ${live.join(', ')}.`)
          : item('provider', 'Live provider', 'attention', 'No provider key: the deterministic mock provider answers every request.',
              'Set CHATCOMP_API_KEY and/or MESSAGES_API_KEY.'),
        live.length >= 2
          ? item('failover', 'Provider failover', 'ready', 'More than one live provider family is configured.')
          : item('failover', 'Provider failover', 'info',
              live.length === 1 ? 'One live provider: no failover target.' : 'No live provider, so no failover.'),
        item('jobs', 'Background job draining', 'ready', 'Background work is drained on shutdown (SIGINT/SIGTERM) before the data file closes.'),
        mode === 'open'
          ? item('private_fetch', 'Private web fetch and webhooks', 'attention',
              'Open dev mode allows web fetches to private addresses; webhooks must be public in every mode.')
          : item('private_fetch', 'Private web fetch and webhooks', 'ready', 'Web fetches and webhooks are limited to public addresses.'),
        config.accounts.appBaseUrl
          ? item('host_split', 'Public app host', 'ready', `E-mailed links use ${config.accounts.appBaseUrl}.`)
          : item('host_split', 'Public app host', 'info',
              `SVC_APP_BASE_URL is unset: e-mailed links use this server's configured address, ${config.accounts.linkBaseUrl}.`,
              'Set SVC_APP_BASE_URL to the public address of the app.'),
        item('billing', 'Billing and quota enforcement', 'info', 'No payment provider is configured: plans are changed directly by an admin.'),
        storageItem(deps.deferredWriteLosses(), item),
      ];
      const count = (status: ReadinessStatus) => items.filter((i) => i.status === status).length;
      const publicCritical = new Set(['auth', 'vault', 'private_fetch']);
      return {
        generatedAt: clock.now(),
        summary: {
          ready: count('ready'),
          attention: count('attention'),
          info: count('info'),
          publicReady: !items.some((i) => publicCritical.has(i.id) && i.status === 'attention'),
        },
        items,
      };
    },
  };
}
