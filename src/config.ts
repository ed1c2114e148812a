/**
 * Every setting of svc, parsed once from the environment (and `svc serve` flags) by one zod schema.
 * This module and cli/ are the readers of `process.env`; everything else receives a `Config`, but for libuv's
 * UV_THREADPOOL_SIZE (src/net/url-guard.ts sizes its share of that pool by it) and the reference client's own
 * fallbacks (src/client/). docs/configuration.md lists each variable; keep the two in step.
 */
import { isIP } from 'node:net';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { emailField } from './accounts/email-address.ts';
import { normalizePassword, PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from './accounts/passwords.ts';
import { isPrintableText, UNPRINTABLE_MESSAGE } from './core/text.ts';

const MiB = 1024 * 1024;

/**
 * `true`/`1`/`yes`/`on` (any case) are true, `false`/`0`/`no`/`off` false; unset is the default. Anything else is
 * refused rather than read as false: `SVC_REQUIRE_LOGIN=ture` would start svc open, every caller an admin.
 */
const flag = (fallback: boolean) =>
  z
    .string()
    .optional()
    .transform((value, ctx): boolean => {
      if (value === undefined || value.trim() === '') return fallback;
      const word = value.trim().toLowerCase();
      if (word === 'true' || word === '1' || word === 'yes' || word === 'on') return true;
      if (word === 'false' || word === '0' || word === 'no' || word === 'off') return false;
      ctx.addIssue({ code: 'custom', message: 'must be true, 1, yes or on, or false, 0, no or off' });
      return z.NEVER;
    });

const int = <Fallback extends number | null>(fallback: Fallback, min: number, max: number) =>
  z
    .string()
    .optional()
    .transform((value, ctx): number | Fallback => {
      if (value === undefined || value.trim() === '') return fallback;
      // Decimal digits only: Number() would also read `0x1f90`, `1e3` and `8080.0` as integers.
      const n = Number(value);
      if (!/^\d+$/.test(value.trim()) || n < min || n > max) {
        ctx.addIssue({ code: 'custom', message: `must be an integer from ${min} to ${max}` });
        return z.NEVER;
      }
      return n;
    });

const optionalString = z
  .string()
  .optional()
  .transform((value) => (value === undefined || value.trim() === '' ? null : value.trim()));

const cidrList = optionalString.transform((value) =>
  value === null ? [] : value.split(',').map((entry) => entry.trim()).filter(Boolean),
);

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

export const DEFAULT_PORT = 8787;
export const DEFAULT_HOST = '127.0.0.1';
export function defaultDataDir(): string {
  return join(homedir(), '.svc');
}

const envSchema = z.object({
  SVC_PORT: int(DEFAULT_PORT, 0, 65535),
  SVC_HOST: optionalString,
  SVC_DATA_DIR: optionalString,
  // Blank counts as unset, as for every variable (a compose file's `SVC_LOG_LEVEL=`).
  SVC_LOG_LEVEL: optionalString.pipe(z.enum(LOG_LEVELS).nullable()),

  SVC_API_KEY: optionalString,
  SVC_REQUIRE_LOGIN: flag(false),
  SVC_ALLOW_OPEN_GATEWAY: flag(false),
  SVC_TRUST_PROXY_HEADERS: flag(false),
  SVC_TRUSTED_PROXY_CIDRS: cidrList,
  SVC_MASTER_KEY: optionalString,

  SVC_ALLOW_PUBLIC_SIGNUP: flag(false),
  SVC_APP_BASE_URL: optionalString,
  SVC_EMAIL_FROM: optionalString,
  SVC_EMAIL_API_URL: optionalString,
  EMAILPROV_API_KEY: optionalString,
  SVC_ADMIN_EMAIL: optionalString,
  SVC_ADMIN_PASSWORD: z
    .string()
    .optional()
    .transform((value) => (value === undefined || value === '' ? null : value)),

  CHATCOMP_API_KEY: optionalString,
  CHATCOMP_BASE_URL: optionalString,
  CHATCOMP_FALLBACK_API_KEY: optionalString,
  CHATCOMP_FALLBACK_BASE_URL: optionalString,
  MESSAGES_API_KEY: optionalString,
  MESSAGES_BASE_URL: optionalString,

  SVC_GATEWAY_BODY_LIMIT_BYTES: int(32 * MiB, 1024, 1024 * MiB),
  SVC_GATEWAY_INFLIGHT_BODY_BYTES: int(256 * MiB, 1024, 64 * 1024 * MiB),
  SVC_GATEWAY_INFLIGHT_ANSWER_BYTES: int(256 * MiB, 1024, 64 * 1024 * MiB),
  SVC_API_BODY_LIMIT_BYTES: int(1 * MiB, 1024, 256 * MiB),
  SVC_RATE_LIMIT_API_PER_MINUTE: int(600, 1, 10_000_000),
  SVC_RATE_LIMIT_GATEWAY_PER_MINUTE: int(3000, 1, 10_000_000),
  SVC_HEADERS_TIMEOUT_MS: int(15_000, 1000, 600_000),
  SVC_REQUEST_TIMEOUT_MS: int(120_000, 1000, 3_600_000),
  SVC_IDLE_TIMEOUT_MS: int(960_000, 1000, 86_400_000),
  SVC_KEEP_ALIVE_TIMEOUT_MS: int(72_000, 1000, 600_000),
  SVC_SHUTDOWN_TIMEOUT_MS: int(30_000, 0, 600_000),
  SVC_AUTH_FAILURES_PER_MINUTE: int(30, 1, 1_000_000),
  SVC_RETENTION_INTERVAL_MS: int(600_000, 1000, 86_400_000),
  SVC_TRACE_COMMITS: optionalString,
  SVC_BUSY_POLL_US: int(null, 0, 10_000),
  SVC_PROVIDER_CONNECT_TIMEOUT_MS: int(10_000, 100, 600_000),
  SVC_PROVIDER_TIMEOUT_MS: int(900_000, 100, 3_600_000),
  SVC_PROVIDER_STREAM_HEADERS_TIMEOUT_MS: int(30_000, 100, 600_000),
  SVC_PROVIDER_STREAM_IDLE_TIMEOUT_MS: int(300_000, 100, 3_600_000),
  SVC_PROVIDER_MAX_ANSWER_BYTES: int(64 * MiB, 1 * MiB, 1024 * MiB),
  SVC_CACHE_MAX_ENTRY_BYTES: int(8 * MiB, 1024, 1024 * MiB),
});

export interface Config {
  port: number;
  host: string;
  /** Absolute path of the data directory, or null for an in-memory store (tests only). */
  dataDir: string | null;
  /** SVC_TRACE_COMMITS: a file each deferred window's commit is noted in (src/store/commit-trace.ts); null: none. */
  traceCommitsFile: string | null;
  /**
   * SVC_BUSY_POLL_US: the longest quiet stretch the event loop polls through after HTTP activity (src/http/busy-poll.ts);
   * 0: off; null (unset): the default for this machine (`defaultBusyPollUs`).
   */
  busyPollUs: number | null;
  logLevel: (typeof LOG_LEVELS)[number];
  version: string;
  auth: {
    /** The bootstrap token of protected mode (SPEC 5.1). */
    bootstrapToken: string | null;
    requireLogin: boolean;
    allowOpenGateway: boolean;
  };
  proxy: { trustHeaders: boolean; trustedCidrs: string[] };
  /** Raw master key material from SVC_MASTER_KEY; null means the key file in the data directory. */
  masterKey: string | null;
  accounts: {
    allowPublicSignup: boolean;
    /** SVC_APP_BASE_URL as configured (null when unset). */
    appBaseUrl: string | null;
    /**
     * Base of every e-mailed link (accept, verify, reset): SVC_APP_BASE_URL, else this server's own configured
     * address. Built from configuration only, never from a request's Host header.
     */
    linkBaseUrl: string;
    emailFrom: string;
    /** Provider transport (docs/accounts.md): both set, or neither. */
    email: { apiKey: string; apiUrl: string } | null;
    /** Bootstrap admin of SPEC 5.2 (both set, or neither). */
    bootstrapAdmin: { email: string; password: string } | null;
  };
  providers: {
    /** `fallback`: a second compatible upstream the registry fails open to (docs/providers.md); its base URL defaults to `baseUrl`. */
    chatCompletions: { apiKey: string | null; baseUrl: string; fallback: { apiKey: string | null; baseUrl: string | null } };
    messages: { apiKey: string | null; baseUrl: string };
    /** Upstream time bounds (docs/providers.md): connect; whole buffered call; stream headers; silence between chunks. */
    timeouts: { connectMs: number; bufferedMs: number; streamHeadersMs: number; streamIdleMs: number };
    /** The most bytes an upstream answer may have, buffered or streamed; embeddings answers four times that. */
    maxAnswerBytes: number;
  };
  limits: {
    gatewayBodyBytes: number;
    /** The request bodies of gateway calls in progress, in total (src/http/body-budget.ts). */
    gatewayInflightBodyBytes: number;
    /** The upstream answers of gateway calls in progress, in total (src/gateway/answer-budget.ts). */
    gatewayInflightAnswerBytes: number;
    /** The most bytes an answer's JSON may have to be stored in the exact cache (src/caches/service.ts). */
    cacheEntryBytes: number;
    apiBodyBytes: number;
    apiRatePerMinute: number;
    gatewayRatePerMinute: number;
    headersTimeoutMs: number;
    requestTimeoutMs: number;
    idleTimeoutMs: number;
    keepAliveTimeoutMs: number;
    shutdownTimeoutMs: number;
    /** Failed authentications per client address per minute before it gets 429s (src/http/auth-failures.ts). */
    authFailuresPerMinute: number;
    /** How often the retention pass runs (`retention_days` per tenant decides what it deletes). */
    retentionIntervalMs: number;
  };
}

/** Flags of `svc serve` that override the environment. */
export interface ConfigOverrides {
  port?: number;
  host?: string;
  dataDir?: string | null;
  logLevel?: Config['logLevel'];
}

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

export const DEFAULT_EMAIL_FROM = 'svc <no-reply@localhost>';

/** An http(s) base URL without a trailing slash, query or credentials. */
function baseUrl(name: string, value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError(`invalid configuration: ${name}: must be an absolute http(s) URL`);
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.username || url.password || url.search || url.hash) {
    throw new ConfigError(`invalid configuration: ${name}: must be an http(s) URL without credentials, query or fragment`);
  }
  return url.href.replace(/\/+$/, '');
}

/**
 * This server's own address from its configuration, for links when SVC_APP_BASE_URL is unset. A host that cannot
 * stand in a URL (`0.0.0.0:8787`, `999.1.1.1`) is refused here, named, rather than as "Invalid URL" later.
 */
function ownAddress(host: string, port: number, source: string): string {
  const reachable = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  const address = `http://${reachable.includes(':') ? `[${reachable}]` : reachable}:${port}`;
  if (!URL.canParse(address)) {
    throw new ConfigError(`invalid configuration: ${source}: must be a host name or an IP address without a port, such as 127.0.0.1 or :: (got "${host}")`);
  }
  return address;
}

/**
 * SVC_TRUSTED_PROXY_CIDRS, checked here so that a bad entry is a configuration error naming the variable, before the
 * data directory is opened (fastify's parser, proxy-addr, would refuse it later: "invalid range on address: ...").
 * Entries as proxy-addr takes them: an address, an address with a prefix length or an IPv4 netmask, or one of its
 * names `loopback`, `linklocal`, `uniquelocal`.
 */
function trustedProxies(entries: string[]): string[] {
  for (const entry of entries) {
    if (entry === 'loopback' || entry === 'linklocal' || entry === 'uniquelocal') continue;
    const [address = '', range, ...rest] = entry.split('/');
    const family = isIP(address);
    const valid =
      family !== 0 &&
      rest.length === 0 &&
      (range === undefined ||
        (/^\d{1,3}$/.test(range) && Number(range) <= (family === 4 ? 32 : 128)) ||
        (family === 4 && isIP(range) === 4));
    if (!valid) {
      throw new ConfigError(`invalid configuration: SVC_TRUSTED_PROXY_CIDRS: "${entry}" is not an IP address or CIDR range (such as 10.0.0.0/8)`);
    }
    // proxy-addr takes a range of 1 address bit or more, a netmask only with its ones first: /0 (every address, so
    // any client could name itself in X-Forwarded-For) stopped the start after the data directory was made, with
    // proxy-addr's "invalid range on address" naming no variable.
    if (range !== undefined && prefixLength(range) === 0) {
      throw new ConfigError(
        `invalid configuration: SVC_TRUSTED_PROXY_CIDRS: "${entry}" trusts no proxy in particular: a range must hold at least one network bit ` +
          '(a prefix length of 1 or more, a netmask with its ones first), such as 10.0.0.0/8',
      );
    }
  }
  return entries;
}

/** The prefix length of a range, a length or an IPv4 netmask; 0 also for a netmask whose ones do not come first. */
function prefixLength(range: string): number {
  if (/^\d+$/.test(range)) return Number(range);
  const bits = range.split('.').map((octet) => Number(octet).toString(2).padStart(8, '0')).join('');
  // The leading ones, when only zeros follow them.
  return /^(1*)0*$/.exec(bits)?.[1]!.length ?? 0;
}

/**
 * The provider transport, or null for the console. SVC_EMAIL_API_URL is checked whenever it is set, as every base
 * address is: without the key it is not used, and one that is no URL started svc until the key was added.
 */
function emailProvider(apiKey: string | null, apiUrl: string | null): Config['accounts']['email'] {
  const url = apiUrl === null ? null : baseUrl('SVC_EMAIL_API_URL', apiUrl);
  if (apiKey === null) return null;
  if (url === null) {
    throw new ConfigError('invalid configuration: SVC_EMAIL_API_URL: required when EMAILPROV_API_KEY is set');
  }
  return { apiKey, apiUrl: url };
}

/**
 * `Name <address>` or a bare address; the name quoted (`"svc, Inc." <...>`) or free of the characters that end a
 * mailbox or start another (RFC 5322 specials but the dot), `"` and `\\` inside quotes; no `,` or `;` in the address.
 */
const SENDER = /^(?:(?:"[^"\\]*"|[^"<>()[\]:;@\\,]*?)\s*<([^<>,;]+)>|([^<>,;\s]+))$/;

/**
 * SVC_EMAIL_FROM, sent as it is in every e-mail (the provider's `from`, the console's `(from ...)` line), so checked
 * at start: one holding a line break (or U+2028/2029) could add header lines where a provider writes it into the
 * message, a comma or a second `<...>` names more senders, and one a provider refuses failed every invitation (503)
 * and every reset (unseen, after its 202) instead of the start. The address is held to the rule of every address
 * svc stores.
 */
function emailSender(value: string | null): string {
  if (value === null) return DEFAULT_EMAIL_FROM;
  const refuse = (why: string) => new ConfigError(`invalid configuration: SVC_EMAIL_FROM: ${why}`);
  if (!isPrintableText(value)) throw refuse(UNPRINTABLE_MESSAGE);
  const parts = SENDER.exec(value);
  if (!parts) throw refuse('must be an address or a name and an address in angle brackets, such as svc <no-reply@example.com>; quote a name holding , ; : @ ( ) [ ]');
  const address = emailField.safeParse(parts[1] ?? parts[2]);
  if (!address.success) throw refuse(`the address ${address.error.issues[0]!.message}`);
  return value;
}

function bootstrapAdmin(email: string | null, password: string | null): Config['accounts']['bootstrapAdmin'] {
  if (email === null && password === null) return null;
  if (email === null || password === null) {
    throw new ConfigError('invalid configuration: SVC_ADMIN_EMAIL and SVC_ADMIN_PASSWORD must be set together');
  }
  // Held to the rule of every address an account is given: `notanemail` made a platform admin no e-mail reaches.
  const address = emailField.safeParse(email);
  if (!address.success) throw new ConfigError(`invalid configuration: SVC_ADMIN_EMAIL: ${address.error.issues[0]!.message}`);
  // Checked here too, not only when the account is first made: before the data directory is opened, and also once the
  // admin exists (a password that breaks the rules did not stop a restart).
  try {
    normalizePassword(password);
  } catch {
    throw new ConfigError(`invalid configuration: SVC_ADMIN_PASSWORD: must be ${PASSWORD_MIN_LENGTH} to ${PASSWORD_MAX_LENGTH} characters long`);
  }
  return { email: address.data, password };
}

export const SVC_VERSION: string = typeof __SVC_VERSION__ === 'string' ? __SVC_VERSION__ : '0.1.0-dev';
declare const __SVC_VERSION__: string | undefined;

/** `schema` read from `env`, or the ConfigError naming every variable that is not right. */
function parseEnv<Schema extends z.ZodType>(schema: Schema, env: NodeJS.ProcessEnv): z.output<Schema> {
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
    throw new ConfigError(`invalid configuration: ${problems.join('; ')}`);
  }
  return parsed.data;
}

/**
 * How long an admin command waits for a data directory another process holds without a reachable socket
 * (cli/connection.ts): a server starting (it listens after taking the lock) or another command finishing. Only the CLI
 * reads it, so `svc serve` does not check it; tests shorten it, an operator's script may lengthen it.
 */
const cliEnvSchema = z.object({ SVC_OWNER_WAIT_MS: int(10_000, 0, 600_000) });

export function loadOwnerWaitMs(env: NodeJS.ProcessEnv = process.env): number {
  return parseEnv(cliEnvSchema, env).SVC_OWNER_WAIT_MS;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: ConfigOverrides = {}): Config {
  const e = parseEnv(envSchema, env);
  const dataDir = overrides.dataDir !== undefined ? overrides.dataDir : (e.SVC_DATA_DIR ?? defaultDataDir());
  const port = overrides.port ?? e.SVC_PORT;
  const host = overrides.host ?? e.SVC_HOST ?? DEFAULT_HOST;
  const address = ownAddress(host, port, overrides.host !== undefined ? '--host' : 'SVC_HOST');
  return {
    port,
    host,
    dataDir: dataDir === null ? null : resolve(dataDir),
    traceCommitsFile: e.SVC_TRACE_COMMITS === null ? null : resolve(e.SVC_TRACE_COMMITS),
    busyPollUs: e.SVC_BUSY_POLL_US,
    logLevel: overrides.logLevel ?? e.SVC_LOG_LEVEL ?? 'info',
    version: SVC_VERSION,
    auth: {
      bootstrapToken: e.SVC_API_KEY,
      requireLogin: e.SVC_REQUIRE_LOGIN,
      allowOpenGateway: e.SVC_ALLOW_OPEN_GATEWAY,
    },
    proxy: {
      trustHeaders: e.SVC_TRUST_PROXY_HEADERS,
      trustedCidrs: e.SVC_TRUST_PROXY_HEADERS ? trustedProxies(e.SVC_TRUSTED_PROXY_CIDRS) : e.SVC_TRUSTED_PROXY_CIDRS,
    },
    masterKey: e.SVC_MASTER_KEY,
    accounts: {
      allowPublicSignup: e.SVC_ALLOW_PUBLIC_SIGNUP,
      appBaseUrl: e.SVC_APP_BASE_URL === null ? null : baseUrl('SVC_APP_BASE_URL', e.SVC_APP_BASE_URL),
      linkBaseUrl: e.SVC_APP_BASE_URL === null ? address : baseUrl('SVC_APP_BASE_URL', e.SVC_APP_BASE_URL),
      emailFrom: emailSender(e.SVC_EMAIL_FROM),
      email: emailProvider(e.EMAILPROV_API_KEY, e.SVC_EMAIL_API_URL),
      bootstrapAdmin: bootstrapAdmin(e.SVC_ADMIN_EMAIL, e.SVC_ADMIN_PASSWORD),
    },
    providers: {
      chatCompletions: {
        apiKey: e.CHATCOMP_API_KEY,
        baseUrl: e.CHATCOMP_BASE_URL === null ? 'https://api.openai.com/v1' : baseUrl('CHATCOMP_BASE_URL', e.CHATCOMP_BASE_URL),
        fallback: {
          apiKey: e.CHATCOMP_FALLBACK_API_KEY,
          baseUrl: e.CHATCOMP_FALLBACK_BASE_URL === null ? null : baseUrl('CHATCOMP_FALLBACK_BASE_URL', e.CHATCOMP_FALLBACK_BASE_URL),
        },
      },
      messages: {
        apiKey: e.MESSAGES_API_KEY,
        baseUrl: e.MESSAGES_BASE_URL === null ? 'https://api.anthropic.com' : baseUrl('MESSAGES_BASE_URL', e.MESSAGES_BASE_URL),
      },
      timeouts: {
        connectMs: e.SVC_PROVIDER_CONNECT_TIMEOUT_MS,
        bufferedMs: e.SVC_PROVIDER_TIMEOUT_MS,
        streamHeadersMs: e.SVC_PROVIDER_STREAM_HEADERS_TIMEOUT_MS,
        streamIdleMs: e.SVC_PROVIDER_STREAM_IDLE_TIMEOUT_MS,
      },
      maxAnswerBytes: e.SVC_PROVIDER_MAX_ANSWER_BYTES,
    },
    limits: {
      gatewayBodyBytes: e.SVC_GATEWAY_BODY_LIMIT_BYTES,
      gatewayInflightBodyBytes: e.SVC_GATEWAY_INFLIGHT_BODY_BYTES,
      gatewayInflightAnswerBytes: e.SVC_GATEWAY_INFLIGHT_ANSWER_BYTES,
      cacheEntryBytes: e.SVC_CACHE_MAX_ENTRY_BYTES,
      apiBodyBytes: e.SVC_API_BODY_LIMIT_BYTES,
      apiRatePerMinute: e.SVC_RATE_LIMIT_API_PER_MINUTE,
      gatewayRatePerMinute: e.SVC_RATE_LIMIT_GATEWAY_PER_MINUTE,
      // The headers are part of the request: they cannot have longer than all of it. node holds a request whose
      // headers came whole to the longer of the two, so a request timeout below the header timeout did not cut a body.
      headersTimeoutMs: Math.min(e.SVC_HEADERS_TIMEOUT_MS, e.SVC_REQUEST_TIMEOUT_MS),
      requestTimeoutMs: e.SVC_REQUEST_TIMEOUT_MS,
      idleTimeoutMs: e.SVC_IDLE_TIMEOUT_MS,
      keepAliveTimeoutMs: e.SVC_KEEP_ALIVE_TIMEOUT_MS,
      shutdownTimeoutMs: e.SVC_SHUTDOWN_TIMEOUT_MS,
      retentionIntervalMs: e.SVC_RETENTION_INTERVAL_MS,
      authFailuresPerMinute: e.SVC_AUTH_FAILURES_PER_MINUTE,
    },
  };
}
