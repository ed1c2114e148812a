import type { FastifyRequest } from 'fastify';

const HTTPS = /^https$/i;

/**
 * The scheme a request reached svc by: https or http. Behind a trusted proxy fastify takes `X-Forwarded-Proto` as the
 * proxy sent it, in any case (`HTTPS`), or whatever a proxy that passes a client's header on was given (`javascript`,
 * `data`): anything but https is http. What svc builds from it (a run's address, the session cookie's Secure flag,
 * the origin a browser's request must come from) is then one of svc's own.
 */
export function requestScheme(request: FastifyRequest): 'http' | 'https' {
  return HTTPS.test(request.protocol) ? 'https' : 'http';
}
