/**
 * What every authenticated surface (`/api/v1`, `/v1`) shares, registered inside that surface's encapsulated
 * plugin: its body limit, identity resolution, the standard rate limiter keyed by identity, and its error shape.
 */
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError } from '../core/errors.ts';
import type { AuthContext } from '../identity/auth-context.ts';
import type { IdentityService, Surface } from '../identity/service.ts';
import { renderError, surfaceOfUrl, toAppError, type ErrorSurface } from './error-shapes.ts';
import type { AuthFailureLimiter } from './auth-failures.ts';
import { isLocalOperator } from './local-socket.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the identity hook of every authenticated surface. */
    auth: AuthContext | null;
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
}

export function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function cookie(request: FastifyRequest, name: string): string | undefined {
  const raw = header(request, 'cookie');
  if (!raw) return undefined;
  for (const part of raw.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return decodeURIComponent(part.slice(eq + 1).trim());
  }
  return undefined;
}

/** The authenticated identity of a request inside a surface; the identity hook guarantees it is set. */
export function authOf(request: FastifyRequest): AuthContext {
  if (!request.auth) throw new AppError('unauthorized');
  return request.auth;
}

/** Render errors of this encapsulated context in the surface's own shape. */
export function installErrorHandler(app: FastifyInstance, fixed?: ErrorSurface): void {
  app.setErrorHandler((error, request, reply) => {
    const appError = toAppError(error);
    if (appError.status >= 500) request.log.error({ err: error }, 'request failed');
    for (const [name, value] of Object.entries(appError.headers)) reply.header(name, value);
    return reply.status(appError.status).send(renderError(fixed ?? surfaceOfUrl(request.url), appError));
  });
}

export async function registerSurface(app: FastifyInstance, options: SurfaceOptions): Promise<void> {
  app.addHook('onRoute', (route) => {
    route.bodyLimit ??= options.bodyLimit;
  });
  installErrorHandler(app);

  app.addHook('onRequest', async (request) => {
    const wait = options.authFailures.retryAfter(request.ip, Date.now());
    if (wait > 0) {
      throw new AppError('rate_limited', {
        message: `Too many failed authentications from this address. Retry after ${wait} s.`,
        headers: { 'retry-after': String(wait) },
      });
    }
    try {
      request.auth = await options.identity.resolve({
        surface: options.surface,
        authorization: header(request, 'authorization'),
        apiKeyHeader: options.acceptApiKeyHeader?.(request) ? header(request, 'x-api-key') : undefined,
        sessionToken: cookie(request, 'svc_session'),
        localSocket: isLocalOperator(request.raw),
        appHeader: header(request, 'x-svc-app'),
        agentHeader: header(request, 'x-svc-agent'),
        subjectHeader: header(request, 'x-svc-subject'),
      });
    } catch (error) {
      if (error instanceof AppError && error.code === 'unauthorized') options.authFailures.record(request.ip, Date.now());
      throw error;
    }
  });

  await app.register(rateLimit, {
    // After identity, so the limit is per key (or per caller when there is no key), not per IP behind a proxy.
    hook: 'onRequest',
    max: options.ratePerMinute,
    timeWindow: 60_000,
    keyGenerator: (request) => {
      const auth = request.auth;
      if (auth?.keyId) return `key:${auth.keyId}`;
      if (auth?.userId) return `user:${auth.userId}`;
      return `ip:${request.ip}`;
    },
    errorResponseBuilder: (_request, context) =>
      new AppError('rate_limited', {
        message: `Rate limit exceeded: at most ${context.max} requests per minute. Retry after ${context.after}.`,
        headers: { 'retry-after': String(Math.max(1, Math.ceil(context.ttl / 1000))) },
      }),
  });
}
