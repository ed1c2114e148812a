/**
 * Resolves the AuthContext of a request (SPEC 5.1 modes, 5.3 identity headers, 2.1/2.2 identities).
 *
 * Modes: open dev (no `SVC_API_KEY`, no users, no `SVC_REQUIRE_LOGIN`): headerless requests are admin of the
 * default tenant. Protected (`SVC_API_KEY` set): a bearer token is required. Login mode (a user exists or
 * `SVC_REQUIRE_LOGIN=true`): headerless `/api/v1/*` and `/v1/*` are refused (gateway traffic only when
 * `SVC_ALLOW_OPEN_GATEWAY=true`), sessions authenticate `/api/v1/*`.
 *
 * Every refusal is the same `unauthorized` error, so a caller cannot tell a malformed header from a revoked key.
 */
import { AppError, invalid } from '../core/errors.ts';
import { constantTimeEqual } from '../core/ids.ts';
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
}

/** Resolves a session cookie to an identity; provided by the accounts area once it lands. */
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
  /** Number of user accounts; the first user switches svc into login mode. */
  countUsers: () => Promise<number>;
  sessions?: SessionResolver;
}

const unauthorized = () => new AppError('unauthorized');
const BEARER = /^Bearer +([\x21-\x7e]+) *$/i;
const IDENTITY_HEADER_MAX = 200;

function identityHeader(name: string, value: string | undefined): string | null {
  if (value === undefined) return null;
  const trimmed = value.trim();
  if (trimmed === '') return null;
  if (trimmed.length > IDENTITY_HEADER_MAX || !/^[\x20-\x7e]+$/.test(trimmed)) {
    throw invalid(`${name} must be printable ASCII of at most ${IDENTITY_HEADER_MAX} characters`);
  }
  return trimmed;
}

export function createIdentityService(deps: IdentityDeps): IdentityService {
  async function mode(): Promise<AuthMode> {
    if (deps.requireLogin || (await deps.countUsers()) > 0) return 'login';
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
    };
  }

  async function fromToken(token: string, headers: Headers3, currentMode: AuthMode): Promise<AuthContext> {
    if (deps.bootstrapToken && constantTimeEqual(token, deps.bootstrapToken)) return operator('bootstrap', headers);
    const key = await deps.keys.authenticate(token);
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
      };
    }
    // SDKs insist on some API key; in open dev mode a placeholder that is not an svc key is treated as no
    // credential. A token shaped like an svc key that does not match (revoked, mistyped) is always refused.
    if (currentMode === 'open' && !deps.keys.looksLikeKey(token)) return operator('open', headers);
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
      if (input.localSocket) return operator('local', headers);
      const currentMode = await mode();

      if (input.authorization !== undefined) {
        const match = BEARER.exec(input.authorization);
        if (!match) throw unauthorized();
        return fromToken(match[1]!, headers, currentMode);
      }
      if (input.apiKeyHeader !== undefined) {
        const token = input.apiKeyHeader.trim();
        if (!token) throw unauthorized();
        return fromToken(token, headers, currentMode);
      }
      if (input.sessionToken && input.surface === 'api' && deps.sessions) {
        const session = await deps.sessions(input.sessionToken);
        if (session) return session;
        if (currentMode !== 'open') throw unauthorized();
      }
      if (currentMode === 'open') return operator('open', headers);
      if (input.surface === 'gateway' && deps.allowOpenGateway) {
        return operator('open', headers, false);
      }
      throw unauthorized();
    },
  };
}

interface Headers3 {
  app: string | null;
  agent: string | null;
  subject: string | null;
}
