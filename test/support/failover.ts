/** How a gateway answers an upstream's failure, alone and with a fallback behind it (tests of error classification). */
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { json } from './build.ts';
import type { FakeUpstream } from './fake-upstream.ts';
import { validateAgainst } from './openapi.ts';

export interface FailureCase {
  /** The gateway wire's path, as `/v1/responses`. */
  path: string;
  body: string;
  /** What a gateway with the failing upstream alone answers. */
  status: number;
  /** Whether svc tries the next provider on this failure. */
  failsOver: boolean;
  label: string;
}

/**
 * One request to `alone` (the failing upstream its only provider): answered `status`, with `retry-after` on a 429,
 * an error body the OpenAPI document has, and a failed run. Then one to `both` (the fallback behind it): a 200 that
 * asked the fallback when svc fails over, else the same status and the fallback never asked. Resolves to the first
 * answer's body and the second's text, for the caller's own checks.
 */
export async function expectFailureAnswered(
  gateways: { alone: { address: string; app: FastifyInstance }; both: { address: string }; fallback: FakeUpstream },
  each: FailureCase,
): Promise<{ refused: unknown; answered: string }> {
  const { alone, both, fallback } = gateways;
  const post = (address: string) => fetch(`${address}${each.path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: each.body });
  const refusal = await post(alone.address);
  assert.equal(refusal.status, each.status, each.label);
  if (each.status === 429) assert.ok(Number(refusal.headers.get('retry-after')) >= 1, each.label);
  const refused: unknown = await refusal.json();
  assert.equal(validateAgainst('ErrorResponse', refused), null, each.label);
  const run = json(await alone.app.inject({ url: `/api/v1/runs/${refusal.headers.get('x-svc-run-id')}` })).run;
  assert.equal(run.status, 'failed', each.label);

  const asked = fallback.requests.length;
  const answer = await post(both.address);
  assert.equal(answer.status, each.failsOver ? 200 : each.status, each.label);
  const answered = await answer.text();
  assert.equal(fallback.requests.length, asked + (each.failsOver ? 1 : 0), each.label);
  return { refused, answered };
}
