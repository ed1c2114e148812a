/** The dashboard address of a run (SPEC 9.4 `x-svc-run-url`): `SVC_APP_BASE_URL` when set, else this request's origin. */
import type { FastifyRequest } from 'fastify';

export function runUrl(appBaseUrl: string | null, request: FastifyRequest, runId: string): string {
  const base = appBaseUrl ?? `${request.protocol}://${request.host}`;
  return `${base.replace(/\/+$/, '')}/runs/${encodeURIComponent(runId)}`;
}
