/**
 * The identity of a request (SPEC 2.1, 5): who is calling, for which tenant, with which powers.
 * Resolved once per request by the identity plugin; services receive it as a plain value and never look at
 * headers themselves.
 */

/** How the caller authenticated. */
export type IdentityKind =
  /** Open dev mode (SPEC 5.1): no credentials configured, every caller is an admin of the default tenant. */
  | 'open'
  /** The `SVC_API_KEY` bootstrap token: admin of the default tenant. */
  | 'bootstrap'
  /** A tenant API key created through `/api/v1/keys`. */
  | 'api_key'
  /** A dashboard session (accounts issue). */
  | 'session'
  /** A connection on the data directory's local socket: the operator at the machine (platform admin). */
  | 'local';

export type KeyMode = 'observe' | 'optimize';

/** A user's role in one organization (SPEC 2.1 org_members). */
export type OrgRole = 'owner' | 'admin' | 'member';

/**
 * The tenant of a session whose user belongs to no organization any more: it matches no row, and the HTTP edge
 * lets such a session reach only the account endpoints (docs/accounts.md).
 */
export const NO_ORGANIZATION = '';

/** What a session adds to its identity (kind `session` only). */
export interface SessionFacts {
  /** The session's public id (`ses_...`). */
  id: string;
  /** The user's role in the resolved organization; null without one. */
  orgRole: OrgRole | null;
  /** A temporary password must be changed before anything but the account endpoints. */
  mustChangePassword: boolean;
}

export interface AuthContext {
  kind: IdentityKind;
  tenantId: string;
  /** Admin of the tenant (admin key, bootstrap token, owner/admin session, platform admin, local operator). */
  admin: boolean;
  /** True unless the identity is an API key pinned to an app (SPEC 2.2: app-pinned identities). */
  tenantWide: boolean;
  /** Platform-wide admin (bootstrap token, local operator, platform-admin users). */
  platformAdmin: boolean;
  /** The app: the key's pinned app when pinned (it overrides `X-Svc-App`), else the header's value. */
  appId: string | null;
  /** `X-Svc-Agent`, for trust and audit. */
  agent: string | null;
  /** `X-Svc-Subject`, a pseudonymous end user; also a cache-key safety dimension. */
  subject: string | null;
  /**
   * Gateway mode. API keys carry their own; every other identity acts in `optimize` (docs/api.md explains why:
   * open dev mode, the bootstrap token and sessions are operator identities, not SDK traffic to shadow).
   */
  mode: KeyMode;
  keyId: string | null;
  userId: string | null;
  /** Set for session identities only. */
  session: SessionFacts | null;
}

/** What the audit log records about an actor: ids only, never tokens or hashes. */
export function actorOf(auth: AuthContext): Record<string, string> {
  const actor: Record<string, string> = { kind: auth.kind };
  if (auth.keyId) actor.keyId = auth.keyId;
  if (auth.userId) actor.userId = auth.userId;
  if (auth.appId) actor.appId = auth.appId;
  if (auth.agent) actor.agent = auth.agent;
  return actor;
}
