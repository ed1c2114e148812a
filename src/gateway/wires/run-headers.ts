/** The dashboard address of a run (SPEC 9.4 `x-svc-run-url`): `SVC_APP_BASE_URL` when set, else this request's origin. */
import type { FastifyRequest } from 'fastify';
import { requestScheme } from '../../http/request-scheme.ts';

/** A Host header that is a host and an optional port, nothing else (no path, query, user info, spaces). */
const HOST = /^(?:[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.?|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

/**
 * The origin the request reached: its Host when it is one (the client chose it; `evil.example/phish?x=` or
 * `user@evil.example` would make the run's address another page), else the address the connection reached.
 */
function originOf(request: FastifyRequest): string {
  const scheme = requestScheme(request);
  if (HOST.test(request.host)) return `${scheme}://${request.host}`;
  const { localAddress, localPort } = request.socket;
  if (!localAddress || !localPort) return `${scheme}://localhost`;
  return `${scheme}://${localAddress.includes(':') ? `[${localAddress}]` : localAddress}:${localPort}`;
}

export function runUrl(appBaseUrl: string | null, request: FastifyRequest, runId: string): string {
  const base = appBaseUrl ?? originOf(request);
  return `${base.replace(/\/+$/, '')}/runs/${encodeURIComponent(runId)}`;
}
