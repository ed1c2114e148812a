/**
 * Resolves the AuthContext of a request (SPEC 5.1 modes, 5.3 identity headers, 2.1/2.2 identities).
 *
 * Modes: open dev (no `SVC_API_KEY`, no users, no `SVC_REQUIRE_LOGIN`): headerless requests are admin of the
 * default tenant. Protected (`SVC_API_KEY` set): a bearer token is required. Login mode (a user exists or
 * `SVC_REQUIRE_LOGIN=true`): headerless `/api/v1/*` and `/v1/*` are refused (gateway traffic only when
 * `SVC_ALLOW_OPEN_GATEWAY=true`), sessions authenticate `/api/v1/*`.
 *
 * Every refusal is the same `unauthorized` error, so a caller cannot tell a malformed header from a revoked key. Two
 * different tokens (`Authorization` and `x-api-key`) are a 400 before either is checked: that tells nothing of either.
 */
import { AppError, invalid, notFound } from '../core/errors.ts';
import { secretMatcher, sha256Hex } from '../core/ids.ts';
import type { KeysService } from '../keys/service.ts';
import { DEFAULT_TENANT_ID } from '../tenants/defaults.ts';
import type { AuthContext } from './auth-context.ts';

export type Surface = 'api' | 'gateway';

/** What the HTTP edge extracts from a request; nothing fastify-specific. */
export interface CredentialInput {
  surface: Surface;
  /** Raw `Authorization` header, if any. */
  authorization: string | undefined;
  /** Raw `x-api-key` header (accepted on the messages wire only; the route decides). */
  apiKeyHeader?: string | undefined;
  /** Raw `svc_session` cookie value, if any. */
  sessionToken?: string | undefined;
  /** The connection arrived on the data directory's local socket (the operator at the machine). */
  localSocket: boolean;
  appHeader: string | undefined;
  agentHeader: string | undefined;
  subjectHeader: string | undefined;
  /**
   * `X-Svc-Tenant` (management API only): lets a platform admin that is not a session (local operator, bootstrap
   * token) act in another organization (docs/accounts.md). Anyone else sending it is refused, and so is gateway
   * traffic naming another organization than its credential's.
   */
  tenantHeader?: string | undefined;
  /**
   * The route reads what a deleted organization left behind, its audit log (docs/accounts.md "Deletion"): there
   * `X-Svc-Tenant` may also name a deleted organization, for any platform admin, a platform-admin user's session too.
   */
  readsDeletedTenants?: boolean;
}

/** Resolves a session cookie to an identity (src/accounts/sessions.ts); null when the session is unknown or over. */
export type SessionResolver = (token: string) => Promise<AuthContext | null>;

export type AuthMode = 'open' | 'protected' | 'login';

export interface IdentityService {
  resolve(input: CredentialInput): Promise<AuthContext>;
  mode(): Promise<AuthMode>;
}

export interface IdentityDeps {
  bootstrapToken: string | null;
  requireLogin: boolean;
  allowOpenGateway: boolean;
  keys: KeysService;
  /** Whether login mode started (the first user exists, recorded for good; docs/accounts.md). */
  loginModeActive: () => Promise<boolean>;
  sessions?: SessionResolver;
  /** Whether an organization exists (for `X-Svc-Tenant`). */
  tenantExists?: (tenantId: string) => Promise<boolean>;
  /** Whether an organization was deleted, as opposed to never existed (for `X-Svc-Tenant` where `readsDeletedTenants`). */
  tenantDeleted?: (tenantId: string) => Promise<boolean>;
}

const unauthorized = () => new AppError('unauthorized');
const BEARER = /^Bearer +([\x21-\x7e]+) *$/i;
const IDENTITY_HEADER_MAX = 200;
/**
 * A value with HTTP's whitespace (space, tab) around it, nothing else outside printable ASCII. Checked before
 * trimming: `trim()` also takes off a non-breaking space (a 0xA0 byte, which node reads as U+00A0) and other Unicode
 * spaces, so "\xa0user-42" acted as the subject "user-42", sharing its cache entries.
 */
const HTTP_WHITESPACE_AND_PRINTABLE = /^[\t\x20-\x7e]*$/;
const PRINTABLE = /^[\x20-\x7e]+$/;

function identityHeader(name: string, value: string | undefined): string | null {
  if (value === undefined) return null;
  const printable = HTTP_WHITESPACE_AND_PRINTABLE.test(value);
  const trimmed = value.trim();
  if (printable && trimmed === '') return null;
  if (!printable || trimmed.length > IDENTITY_HEADER_MAX || !PRINTABLE.test(trimmed)) {
    throw invalid(`${name} must be printable ASCII of at most ${IDENTITY_HEADER_MAX} characters`);
  }
  return trimmed;
}

export function createIdentityService(deps: IdentityDeps): IdentityService {
  const isBootstrapToken = deps.bootstrapToken ? secretMatcher(deps.bootstrapToken) : null;

  async function mode(): Promise<AuthMode> {
    if (deps.requireLogin || (await deps.loginModeActive())) return 'login';
    return deps.bootstrapToken ? 'protected' : 'open';
  }

  function operator(kind: 'open' | 'bootstrap' | 'local', headers: Headers3, admin = true): AuthContext {
    return {
      kind,
      tenantId: DEFAULT_TENANT_ID,
      admin,
      tenantWide: true,
      platformAdmin: admin && kind !== 'open',
      appId: headers.app,
      agent: headers.agent,
      subject: headers.subject,
      mode: 'optimize',
      keyId: null,
      userId: null,
      session: null,
    };
  }

  async function fromToken(token: string, headers: Headers3, currentMode: AuthMode): Promise<AuthContext> {
    const tokenHash = sha256Hex(token);
    if (isBootstrapToken?.(tokenHash)) return operator('bootstrap', headers);
    const key = await deps.keys.authenticate(token, tokenHash);
    if (key) {
      return {
        kind: 'api_key',
        tenantId: key.tenantId,
        admin: key.admin,
        tenantWide: key.appId === null,
        platformAdmin: false,
        // A pinned key's app overrides X-Svc-App (SPEC 5.3).
        appId: key.appId ?? headers.app,
        agent: headers.agent,
        subject: headers.subject,
        mode: key.mode,
        keyId: key.id,
        userId: null,
        session: null,
      };
    }
    // SDKs insist on some API key; in open dev mode a placeholder that is not an svc key is treated as no
    // credential. A token shaped like an svc key that does not match (revoked, mistyped) is always refused.
    if (currentMode === 'open' && !deps.keys.looksLikeKey(token)) return operator('open', headers);
    throw unauthorized();
  }

  /**
   * Apply `X-Svc-Tenant`: only a platform admin that is not a session may pick the organization it acts in. A deleted
   * organization is one no route acts in; where a route reads what it left (`readsDeletedTenants`), every platform
   * admin may name it, a platform-admin user too, who has no other way to an organization whose members are gone.
   */
  async function withTenantOverride(auth: AuthContext, tenantHeader: string | undefined, readsDeletedTenants: boolean): Promise<AuthContext> {
    const tenantId = identityHeader('X-Svc-Tenant', tenantHeader);
    if (tenantId === null || tenantId === auth.tenantId) return auth;
    const operator = auth.platformAdmin && (auth.kind === 'local' || auth.kind === 'bootstrap');
    if (operator && deps.tenantExists && (await deps.tenantExists(tenantId))) return { ...auth, tenantId };
    if (auth.platformAdmin && readsDeletedTenants && deps.tenantDeleted && (await deps.tenantDeleted(tenantId))) return { ...auth, tenantId };
    if (operator) throw notFound('Organization');
    throw new AppError('forbidden', {
      message: 'X-Svc-Tenant is for platform operators; API keys are pinned to their tenant and sessions switch organizations with POST /api/v1/orgs/switch.',
    });
  }

  async function credentialIdentity(input: CredentialInput, headers: Headers3): Promise<AuthContext> {
    if (input.localSocket) return operator('local', headers);
    const currentMode = await mode();

    if (input.authorization !== undefined) {
      const match = BEARER.exec(input.authorization);
      if (!match) throw unauthorized();
      // Both headers (the messages wire): one credential in both, or an ambiguity svc does not settle by precedence.
      // An empty x-api-key is none (an SDK given an empty API key beside its auth token sends one).
      const apiKey = input.apiKeyHeader?.trim();
      if (apiKey !== undefined && apiKey !== '' && apiKey !== match[1]) {
        throw invalid('The request carries two different credentials, in Authorization and x-api-key.');
      }
      return fromToken(match[1]!, headers, currentMode);
    }
    if (input.apiKeyHeader !== undefined) {
      const token = input.apiKeyHeader.trim();
      if (!token) throw unauthorized();
      return fromToken(token, headers, currentMode);
    }
    if (input.sessionToken && input.surface === 'api' && deps.sessions) {
      const session = await deps.sessions(input.sessionToken);
      if (session) return { ...session, appId: headers.app, agent: headers.agent, subject: headers.subject };
      if (currentMode !== 'open') throw unauthorized();
    }
    if (currentMode === 'open') return operator('open', headers);
    if (input.surface === 'gateway' && deps.allowOpenGateway) {
      return operator('open', headers, false);
    }
    throw unauthorized();
  }

  return {
    mode,
    async resolve(input) {
      const headers: Headers3 = {
        app: identityHeader('X-Svc-App', input.appHeader),
        agent: identityHeader('X-Svc-Agent', input.agentHeader),
        subject: identityHeader('X-Svc-Subject', input.subjectHeader),
      };
      const auth = await credentialIdentity(input, headers);
      if (input.surface === 'api') return withTenantOverride(auth, input.tenantHeader, input.readsDeletedTenants === true);
      // The gateway acts in its credential's tenant only: dropping the header would run, cache and bill traffic meant
      // for another organization in this one.
      if (input.tenantHeader !== undefined) {
        const tenantId = identityHeader('X-Svc-Tenant', input.tenantHeader);
        if (tenantId !== null && tenantId !== auth.tenantId) {
          throw invalid('X-Svc-Tenant picks the organization of management calls (/api/v1) only; gateway traffic acts in its credential\'s organization.');
        }
      }
      return auth;
    },
  };
}

interface Headers3 {
  app: string | null;
  agent: string | null;
  subject: string | null;
}
