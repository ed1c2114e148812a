/**
 * What every authenticated surface (`/api/v1`, `/v1`) shares, registered inside that surface's encapsulated
 * plugin: its body limit, identity resolution, the standard rate limiter keyed by identity, and its error shape.
 *
 * Routes say how much identity they need with `config.access` (docs/accounts.md): `public` routes run with or
 * without a credential (an invalid one counts as none); `account` routes take any session, also one whose user has
 * no organization or must change a temporary password; every other route needs a full identity. Cookie-authenticated
 * mutations, and the routes that set the session cookie, must come from an allowed origin (CSRF).
 */
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError } from '../core/errors.ts';
import { NO_ORGANIZATION, type AuthContext } from '../identity/auth-context.ts';
import type { IdentityService, Surface } from '../identity/service.ts';
import { replyError, toAppError } from './error-shapes.ts';
import type { AuthFailureLimiter } from './auth-failures.ts';
import { isLocalOperator } from './local-socket.ts';
import { bodyStillComing, lingerOnClose } from './lingering-close.ts';
import { MonotonicRateWindows } from './rate-window-store.ts';
import { mayServeOpenIdentityAt, openIdentityRefused } from './open-mode-host.ts';
import { originOf, presentedOrigin } from './request-origin.ts';
import { requestScheme } from './request-scheme.ts';
import { cookieOf, SESSION_COOKIE } from './session-cookie.ts';
import { isForwardedIp, limitKeyOfAddress } from '../net/addresses.ts';

/** How much identity a route needs (module header). */
export type RouteAccess = 'public' | 'account';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the identity hook of every authenticated surface; null only on `public` routes without a credential. */
    auth: AuthContext | null;
  }
  interface FastifyContextConfig {
    access?: RouteAccess;
    /** The route sets the session cookie: a foreign origin is refused even without a session (login CSRF). */
    setsSession?: boolean;
    /** The route reads what a deleted organization left (its audit log): `X-Svc-Tenant` may name one (src/identity). */
    readsDeletedTenants?: boolean;
  }
}

export interface SurfaceOptions {
  surface: Surface;
  bodyLimit: number;
  ratePerMinute: number;
  identity: IdentityService;
  /** Shared by every surface: failed authentications per client address. */
  authFailures: AuthFailureLimiter;
  /** Accept `x-api-key` as the credential (the messages wire's SDK sends it). */
  acceptApiKeyHeader?: (request: FastifyRequest) => boolean;
  /** Origins besides the request's own that may send cookie-authenticated mutations (SVC_APP_BASE_URL's). */
  allowedOrigins?: readonly string[];
  /**
   * Host names svc was configured with (SVC_APP_BASE_URL's, SVC_HOST's): besides loopback names and IP literals, the
   * ones an identity granted without a credential is answered at (src/http/open-mode-host.ts).
   */
  openIdentityHosts: readonly string[];
  onInternalError?: InternalErrorObserver;
}

export function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * The client address that keys per-address limits (SPEC 5.4: forwarded headers only from a trusted proxy), an IPv6
 * one by its /64 or by the IPv4 address it carries (src/net/addresses.ts). Every per-address limit reads it here. A
 * request on the local socket has no IP address; it counts as the one address `local`.
 */
export function clientAddress(request: FastifyRequest): string {
  const ip = countedClientIp(request);
  return ip ? limitKeyOfAddress(ip) : 'local';
}

/**
 * The client's IP address as the per-address limits count it (before the /64 of an IPv6 one is taken), and as the
 * request log names it: undefined on the local socket.
 */
export function countedClientIp(request: FastifyRequest): string | undefined {
  const ip = request.ip;
  if (!ip) return undefined;
  // Only a trusted proxy's X-Forwarded-For makes the two differ (checked then alone: every request asks). Its entry is
  // a header, not a checked address: one that is no IP address counts as the proxy (docs/configuration.md).
  const peer = request.raw.socket.remoteAddress;
  return ip === peer || isForwardedIp(ip) ? ip : peer;
}

/** The authenticated identity of a request inside a surface; the identity hook guarantees it is set. */
export function authOf(request: FastifyRequest): AuthContext {
  if (!request.auth) throw new AppError('unauthorized');
  return request.auth;
}

/** The methods that change something: a session-authenticated one must pass the origin check. */
export const MUTATING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * CSRF (docs/accounts.md): a mutation authenticated by the session cookie, or one that sets the cookie, must carry an
 * `Origin` (else `Referer`) equal to the request's own origin or an allowed one. A cookie-authenticated mutation
 * with neither header is refused as well; bearer-token requests are never affected.
 */
function checkOrigin(request: FastifyRequest, allowed: readonly string[]): void {
  if (!MUTATING.has(request.method)) return;
  const bySession = request.auth?.kind === 'session';
  if (!bySession && request.routeOptions.config?.setsSession !== true) return;
  const presented = presentedOrigin(request);
  if (presented === undefined) {
    if (bySession) throw new AppError('csrf_rejected', { message: 'A request made with the session cookie must carry an Origin header.' });
    return;
  }
  const origin = originOf(presented);
  if (origin === 'null' || (origin !== originOf(`${requestScheme(request)}://${request.host}`) && !allowed.includes(origin))) {
    throw new AppError('csrf_rejected');
  }
}

/** Sessions that must change their password or have no organization reach only the account routes. */
function checkSessionScope(auth: AuthContext | null, access: RouteAccess | undefined): void {
  if (!auth?.session || access !== undefined) return;
  if (auth.session.mustChangePassword) throw new AppError('password_change_required');
  if (auth.tenantId === NO_ORGANIZATION) throw new AppError('no_organization');
}

/** Whether the request's connection is closed: nobody is left to read an answer (an injected request has none). */
function clientGone(request: FastifyRequest): boolean {
  return request.raw.socket?.destroyed === true;
}

/**
 * Told the cause of each `500 internal` svc answers (its own failure, whose body stays generic), with the request's id:
 * for a caller in the same process, to whom the cause may be shown (the in-process admin commands, cli/in-process.ts).
 */
export type InternalErrorObserver = (cause: unknown, requestId: string) => void;


/** Render errors of this encapsulated context in the surface's own shape. */
export function installErrorHandler(app: FastifyInstance, onInternalError?: InternalErrorObserver): void {
  app.setErrorHandler((error, request, reply) => {
    const appError = toAppError(error);
    if (appError.code === 'internal') onInternalError?.(appError.cause ?? error, request.id);
    // A client gone before its answer cancels its upstream call, which fails as a `502 upstream_error` nobody reads:
    // no failure of svc's or the upstream's, said at `info` (fastify logs no access line for it); svc's own errors
    // stay errors. A 503 `busy` is load shed as designed (src/http/body-budget.ts), and a 501 the client's transfer
    // coding, not failures: their access log lines say them.
    if (appError.code.startsWith('upstream_') && clientGone(request)) request.log.info({ err: error }, 'request aborted by the client');
    else if (appError.status >= 500 && appError.code !== 'busy' && appError.code !== 'not_implemented') request.log.error({ err: error }, 'request failed');
    for (const [name, value] of Object.entries(appError.headers)) reply.header(name, value);
    // A refusal given before the body is read never reads it: a caller without an identity (401), a path no route
    // serves (404, src/http/unknown-paths.ts), a caller past its window (429), a malformed target or header (400), a
    // content type no parser takes (415), the in-flight budget's 503 `busy`. Kept open, the connection had node drain
    // the body's rest until it ended, or until SVC_REQUEST_TIMEOUT_MS from a client sending without end (a terabyte
    // declared, an endless chunked body): a socket and bandwidth held by anyone, no credential needed. Such an answer
    // to a body still coming closes its connection instead; a request without a body, or whose body had come whole (an
    // error of its handler), keeps it.
    if (bodyStillComing(request.raw)) reply.header('connection', 'close');
    // Answered before its body came whole (a 413, and the refusals above): the client, still sending, must get to read
    // the answer.
    lingerOnClose(request.raw);
    return replyError(request, reply, appError);
  });
}

/**
 * The 401 of a request whose only credential is an `x-api-key` where it is not read (anywhere but the messages wire,
 * docs/api.md): "Missing or invalid bearer token." told a caller who had sent its key nothing about why. Built on
 * this refusal only, so no request that authenticates pays for it; the key is never echoed.
 */
const API_KEY_HEADER_ELSEWHERE = () =>
  new AppError('unauthorized', {
    message: 'x-api-key is read on the messages wire (/v1/messages) only; send the key as Authorization: Bearer <key>.',
  });

export async function registerSurface(app: FastifyInstance, options: SurfaceOptions): Promise<void> {
  app.addHook('onRoute', (route) => {
    route.bodyLimit ??= options.bodyLimit;
  });
  installErrorHandler(app, options.onInternalError);

  const allowedOrigins = (options.allowedOrigins ?? []).map(originOf);
  const openIdentityHosts = options.openIdentityHosts.map((host) => host.toLowerCase());
  app.addHook('onRequest', async (request) => {
    const access = request.routeOptions.config?.access;
    const authorization = header(request, 'authorization');
    const apiKeyHeader = options.acceptApiKeyHeader?.(request) ? header(request, 'x-api-key') : undefined;
    // Only a token that was presented and refused is a guess worth counting. No credential at all (a signed-out page
    // asking who is signed in, an SDK without its key) is a plain 401, and a session cookie is 256 random bits that
    // nobody guesses (a stale one is ordinary): counting those would lock out whole offices.
    const presented = authorization !== undefined || apiKeyHeader !== undefined;
    const address = clientAddress(request);
    // Monotonic: the limiter's window is a minute of elapsed time, which a wall clock stepped back would stretch.
    const now = performance.now();
    // A presented credential counts from here (src/http/auth-failures.ts: pipelined guesses are checked together).
    const wait = presented ? options.authFailures.begin(address, now) : options.authFailures.retryAfter(address, now);
    if (wait > 0) {
      throw new AppError('rate_limited', {
        message: `Too many failed authentications from this address. Retry after ${wait} s.`,
        headers: { 'retry-after': String(wait) },
      });
    }
    let failed = false;
    try {
      request.auth = await options.identity.resolve({
        surface: options.surface,
        authorization,
        apiKeyHeader,
        sessionToken: cookieOf(request, SESSION_COOKIE),
        localSocket: isLocalOperator(request.raw),
        appHeader: header(request, 'x-svc-app'),
        agentHeader: header(request, 'x-svc-agent'),
        subjectHeader: header(request, 'x-svc-subject'),
        tenantHeader: header(request, 'x-svc-tenant'),
        readsDeletedTenants: request.routeOptions.config?.readsDeletedTenants === true,
      });
    } catch (error) {
      const unauthorized = error instanceof AppError && error.code === 'unauthorized';
      // A wrong token is a guess on a public route too: what a public route answers can still tell a good token from a
      // wrong one (with X-Svc-Tenant naming no organization, the bootstrap token's 404 against a wrong token's 200).
      failed = unauthorized && presented;
      if (!(unauthorized && access === 'public')) {
        throw unauthorized && !presented && header(request, 'x-api-key') !== undefined ? API_KEY_HEADER_ELSEWHERE() : error;
      }
      // A public route runs without an identity; a stale cookie or a wrong token on it counts as none.
      request.auth = null;
    } finally {
      if (presented) options.authFailures.settle(address, failed, now);
    }
    if (request.auth?.kind === 'open' && !mayServeOpenIdentityAt(request, openIdentityHosts)) throw openIdentityRefused();
    checkOrigin(request, allowedOrigins);
    checkSessionScope(request.auth, access);
  });

  await app.register(rateLimit, {
    // After identity, so the limit is per key (or per caller when there is no key), not per IP behind a proxy.
    hook: 'onRequest',
    max: options.ratePerMinute,
    timeWindow: 60_000,
    store: MonotonicRateWindows,
    keyGenerator: (request) => {
      const auth = request.auth;
      if (auth?.keyId) return `key:${auth.keyId}`;
      if (auth?.userId) return `user:${auth.userId}`;
      return `ip:${clientAddress(request)}`;
    },
    errorResponseBuilder: (_request, context) =>
      new AppError('rate_limited', {
        message: `Rate limit exceeded: at most ${context.max} ${context.max === 1 ? 'request' : 'requests'} per minute. Retry after ${context.after}.`,
        headers: { 'retry-after': String(Math.max(1, Math.ceil(context.ttl / 1000))) },
      }),
  });
}
