/**
 * `buildApp(services)`: the fastify app with every surface registered, not listening (tests use `inject`;
 * `svc serve` listens, src/server.ts). Registration is explicit: the bundle contains everything by import.
 */
import cors from '@fastify/cors';
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';
import type { Services } from '../services.ts';
import { auditRoutes } from '../audit/routes.ts';
import { healthRoute, readinessRoute } from '../health/routes.ts';
import { keysRoutes } from '../keys/routes.ts';
import { settingsRoutes } from '../settings/routes.ts';
import { AppError } from '../core/errors.ts';
import { cacheRoutes } from '../caches/routes.ts';
import { authRoutes } from '../accounts/auth-routes.ts';
import { orgsRoutes } from '../accounts/orgs-routes.ts';
import { usersRoutes } from '../accounts/users-routes.ts';
import { runsRoutes } from '../evidence/routes.ts';
import { savingsRoutes } from '../evidence/savings-routes.ts';
import { chatCompletionsRoutes } from '../gateway/wires/chat-completions.ts';
import { messagesRoutes } from '../gateway/wires/messages.ts';
import { responsesRoutes } from '../gateway/wires/responses.ts';
import { embeddingsRoutes } from '../gateway/wires/embeddings.ts';
import { modelsRoutes } from '../gateway/wires/models.ts';
import { MESSAGES_REQUEST_ID, replyError, surfaceOfUrl } from './error-shapes.ts';
import { createAuthFailureLimiter } from './auth-failures.ts';
import { CONNECTIONS_CHECKING_INTERVAL_MS, serveApp } from './app-servers.ts';
import { answerClientError } from './client-errors.ts';
import { createBodyBudget } from './body-budget.ts';
import { gatherBody } from './gathered-body.ts';
import { createDraining } from './draining.ts';
import { installJsonBodyParser } from './json-body.ts';
import { repeatedSingularHeader } from './singular-headers.ts';
import { transferCodingRefusal } from './transfer-coding.ts';
import { installErrorHandler, registerSurface, type InternalErrorObserver } from './surface.ts';
import { checkWriteInputs } from './write-inputs.ts';
import type { LogDestination } from './log-destination.ts';
import { requestLogSerializer } from './log-redaction.ts';
import { pagesRoutes } from './pages.ts';
import { notFoundBeforeBody } from './unknown-paths.ts';
import { requestIdOf } from './request-ids.ts';
import { NOSNIFF, NOSNIFF_HEADER } from './nosniff.ts';
import { percentEncodingRefusal } from './percent-encoding.ts';
import { fragmentRefusal } from './fragment.ts';
import { PATH_PARAMETER_MAX_LENGTH } from './path-parameters.ts';

/**
 * Response headers browsers may read cross-origin (SPEC 4.2: run id and route are exposed through CORS), with those
 * the official clients' retry loops read (`retry-after`, `x-should-retry`).
 */
export const EXPOSED_HEADERS = ['x-svc-run-id', 'x-svc-route', 'x-svc-run-url', 'x-svc-provider', 'x-request-id', MESSAGES_REQUEST_ID, 'retry-after', 'x-should-retry'];

export interface BuildAppOptions {
  /** fastify logger: false in tests, pino options in `svc serve` (its destination: src/http/log-destination.ts). */
  logger?: boolean | { level: string; stream?: LogDestination };
  /** Told the cause of each generic `500 internal` answer (src/http/surface.ts). */
  onInternalError?: InternalErrorObserver;
}

export async function buildApp(services: Services, options: BuildAppOptions = {}): Promise<FastifyInstance> {
  const { config } = services;
  const limits = config.limits;
  const draining = createDraining({ headersTimeoutMs: limits.headersTimeoutMs, requestTimeoutMs: limits.requestTimeoutMs });
  const app = Fastify({
    logger: options.logger ? { ...(options.logger === true ? {} : options.logger), serializers: { req: requestLogSerializer } } : false,
    // The largest surface limit; each surface narrows it per route (src/http/surface.ts).
    bodyLimit: Math.max(limits.gatewayBodyBytes, limits.apiBodyBytes),
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    // SPEC 5.4: forwarded headers count only from a direct peer inside SVC_TRUSTED_PROXY_CIDRS.
    trustProxy: config.proxy.trustHeaders && config.proxy.trustedCidrs.length > 0 ? config.proxy.trustedCidrs : false,
    // No total timeout on a request: buffered model calls may take up to 15 minutes and streams longer.
    // Slow clients are cut by the header, body-receipt and idle timeouts of the node server (src/server.ts).
    connectionTimeout: limits.idleTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    // Host is checked by the first hook below, in the surface's error shape (node's own refusal is a bare 400). The
    // request timeout here too: node checks headersTimeout against it when it creates the server, before fastify sets
    // it, and a header timeout over node's default (300 s) refused to start.
    http: {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      connectionsCheckingInterval: CONNECTIONS_CHECKING_INTERVAL_MS,
      requireHostHeader: false,
    },
    // While closing, requests get svc's own 503 (`draining.refuse` below), not fastify's bare one.
    return503OnClosing: false,
    // Parser errors (oversized headers, bytes that are not HTTP, a request timeout) in the surface's error shape too.
    // fastify calls it bound to the app (`this`), whose logger names requests by the same ids.
    clientErrorHandler(this: FastifyInstance, error, socket) {
      answerClientError(error, socket, this.log);
    },
    // Connections idle when the server closes are closed by node; those busy then end after their answer (draining).
    forceCloseConnections: 'idle',
    // Past it a path parameter is 414 before anything reads it (src/http/path-parameters.ts).
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: PATH_PARAMETER_MAX_LENGTH },
    // Errors the router raises before any route or hook runs (a malformed percent-encoding, an over-long path
    // parameter) get the envelope of their surface too; the path is not echoed (it may hold a token).
    frameworkErrors: (error, request, reply) => {
      // The router refuses a target in absolute form holding a `#` itself: refused as the first hook refuses others.
      const appError =
        error.code === 'FST_ERR_MAX_PARAM_LENGTH'
          ? new AppError('uri_too_long')
          : (fragmentRefusal(request.url) ?? new AppError('invalid_request', { message: 'The URL is not valid (bad percent-encoding?).' }));
      draining.track(reply.raw, request.raw.socket);
      void replyError(request, (reply as FastifyReply).header('x-request-id', request.id).header(NOSNIFF_HEADER, NOSNIFF), appError);
    },
    genReqId: (raw) => requestIdOf(raw.headers),
  });
  app.decorate('draining', draining);
  // fastify's server serves the app as svc's others do (src/http/app-servers.ts), its plain request listener replaced.
  app.server.removeListener('request', app.routing);
  serveApp(app.server, app);
  installJsonBodyParser(app);
  // A callback hook, not an async one: it runs on every request and needs no promise.
  app.addHook('onRequest', (request, reply, done) => {
    // The headers every answer carries, set before any hook below can answer.
    reply.header('x-request-id', request.id);
    reply.header(NOSNIFF_HEADER, NOSNIFF);
    // First of all hooks: an answer given by a later one (a CORS preflight) must end its connection while draining too.
    draining.track(reply.raw, request.raw.socket);
    // A NUL anywhere, or a path the router would read otherwise than the surface checks do (src/http/percent-encoding.ts).
    const encoding = percentEncodingRefusal(request.url);
    if (encoding !== null) return done(encoding);
    // A raw `#`, whose fragment the router would read as the query (src/http/fragment.ts).
    const fragment = fragmentRefusal(request.url);
    if (fragment !== null) return done(fragment);
    // Host, Content-Type, a credential or an identity header given twice: which one counts would be the parser's choice.
    const repeated = repeatedSingularHeader(request.raw.rawHeaders);
    if (repeated !== null) return done(new AppError('invalid_request', { message: `The request carries more than one ${repeated} header.` }));
    // RFC 9112 section 3.2: an HTTP/1.1 request without Host is a 400 (HTTP/1.0 had none).
    if (request.headers.host === undefined && request.raw.httpVersion !== '1.0') {
      return done(new AppError('invalid_request', { message: 'An HTTP/1.1 request must carry a Host header.' }));
    }
    const unreadable = transferCodingRefusal(request.raw);
    if (unreadable !== null) return done(unreadable);
    done();
  });
  // Bearer tokens, never cookies, cross origins: `*` without credentials keeps session cookies out of reach. Every
  // method the API answers (the plugin's default allows GET, HEAD and POST only, so a browser client on another origin
  // could not PUT settings, PATCH a key or DELETE an organization).
  await app.register(cors, {
    origin: '*',
    credentials: false,
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
    exposedHeaders: EXPOSED_HEADERS,
    maxAge: 600,
    // An OPTIONS request that is not a preflight (no Origin or Access-Control-Request-Method: a probe, `OPTIONS *`)
    // gets the preflight's 204 too; strict, the plugin answered it a plain-text 400, the one error not in JSON.
    strictPreflight: false,
  });
  // After the CORS hook, so that a browser can read the 503 of a closing server; before identity and rate limits.
  app.addHook('onRequest', draining.refuse);
  // Every surface's body stream: gathered, and on the gateway counted against its budget (decorated below). preParsing
  // hooks run after every onRequest hook, the surfaces' own too: after identity and rate limits, so that a caller
  // refused by those holds nothing, and before the body is read.
  app.addHook('preParsing', gatherBody);
  // `app.close()` alone (tests, a failed start) drains as well; `svc serve` starts it earlier (src/server.ts).
  app.addHook('preClose', async () => {
    draining.begin();
    await draining.flushed();
  });
  app.decorateRequest('auth', null);
  const authFailures = createAuthFailureLimiter(limits.authFailuresPerMinute);
  // The names svc was configured with: an identity granted without a credential is answered there too.
  const openIdentityHosts = [config.host, ...(config.accounts.appBaseUrl ? [new URL(config.accounts.appBaseUrl).hostname] : [])];
  // Upstream connection pools close with the app.
  app.addHook('onClose', async () => {
    await services.providers.close();
  });

  installErrorHandler(app, options.onInternalError);
  // Outside the surfaces: answered before the body is read (src/http/unknown-paths.ts).
  await app.register(notFoundBeforeBody);

  await app.register(healthRoute(services.health));
  // The account pages the e-mails link to (/login, /accept-invite, ...): public, outside the API surfaces.
  await app.register(pagesRoutes());

  await app.register(
    async (api) => {
      // Every answer of the management API is one caller's data (or, for a lookup, has a token in its URL), and a
      // session's requests carry only a cookie, which does not keep an answer out of a shared cache the way
      // Authorization does (RFC 9111 3.5): none is stored. First, so errors of the hooks below carry it too.
      api.addHook('onRequest', (_request, reply, done) => {
        reply.header('cache-control', 'no-store');
        done();
      });
      await registerSurface(api, {
        surface: 'api',
        bodyLimit: limits.apiBodyBytes,
        ratePerMinute: limits.apiRatePerMinute,
        identity: services.identity,
        authFailures,
        allowedOrigins: [new URL(config.accounts.linkBaseUrl).origin],
        openIdentityHosts,
        onInternalError: options.onInternalError,
      });
      // A write's inputs are its path and body: a query parameter sent to one is refused, not dropped.
      api.addHook('preValidation', checkWriteInputs);
      await api.register(readinessRoute(services.health));
      await api.register(authRoutes({ sessions: services.sessions, signup: services.signup, limits: services.limits }));
      await api.register(usersRoutes(services.users));
      await api.register(orgsRoutes({ orgs: services.orgs, invites: services.invites, limits: services.limits }));
      await api.register(keysRoutes(services.keys));
      await api.register(settingsRoutes(services.settings));
      await api.register(auditRoutes(services.audit));
      await api.register(runsRoutes(services.runs));
      await api.register(savingsRoutes(services.savings));
      await api.register(cacheRoutes(services.cache));
      // After the surface's identity hook, before the body (src/http/unknown-paths.ts); registered after the surface's
      // hooks, which its context copies then.
      await api.register(notFoundBeforeBody);
    },
    { prefix: '/api/v1' },
  );

  await app.register(
    async (gateway) => {
      await registerSurface(gateway, {
        surface: 'gateway',
        bodyLimit: limits.gatewayBodyBytes,
        ratePerMinute: limits.gatewayRatePerMinute,
        identity: services.identity,
        authFailures,
        acceptApiKeyHeader: (request) => surfaceOfUrl(request.url) === 'messages',
        openIdentityHosts,
        onInternalError: options.onInternalError,
      });
      // Read by the body stream's hook above, on the requests of this surface's routes (`request.server`) alone.
      gateway.decorate('bodyBudget', createBodyBudget({ budgetBytes: limits.gatewayInflightBodyBytes, bodyLimitBytes: limits.gatewayBodyBytes }));
      await gateway.register(modelsRoutes());
      await gateway.register(embeddingsRoutes(services.embeddings));
      await gateway.register(chatCompletionsRoutes({ gateway: services.gateway, clock: services.clock, appBaseUrl: config.accounts.appBaseUrl }));
      await gateway.register(messagesRoutes({ gateway: services.gateway, appBaseUrl: config.accounts.appBaseUrl }));
      await gateway.register(responsesRoutes({ gateway: services.gateway, clock: services.clock, appBaseUrl: config.accounts.appBaseUrl }));
      // As on /api/v1: after the surface's identity hook, before the body.
      await gateway.register(notFoundBeforeBody);
    },
    { prefix: '/v1' },
  );

  return app;
}
