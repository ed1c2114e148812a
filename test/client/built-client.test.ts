/**
 * The reference client as built (`svc/client`: dist/client.mjs), against a real svc and against servers that are not
 * svc (what `--url` or a proxy may put in svc's place): traced tools' evidence calls, answers of the wrong shape,
 * header options, error messages and the runs list and detail queries.
 */
import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import test from 'node:test';
import { createSvcClient, SvcApiError, SvcStreamError } from 'svc/client';
import { build } from '../support/build.ts';
import { foreignServer } from '../support/foreign-server.ts';

const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) =>
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(typeof body === 'string' ? body : JSON.stringify(body));

/** The request's body, read whole. */
async function bodyOf(req: IncomingMessage): Promise<any> {
  let text = '';
  for await (const chunk of req) text += chunk;
  return text ? JSON.parse(text) : null;
}

// A guard, not a timing assertion: without a bound the calls below wait 150 s each, past the suite's per-test timeout.
const BOUNDED = { timeout: 30_000 };

test('a traced tool\'s evidence calls are bounded: traceTimeoutMs (a RangeError out of range), and a default far below the buffered deadline', BOUNDED, async (t) => {
  // svc that takes every trace call and never answers it.
  const baseUrl = await foreignServer(t, () => undefined);
  assert.throws(() => createSvcClient({ baseUrl, env: {}, traceTimeoutMs: 0 }), RangeError);
  assert.throws(() => createSvcClient({ baseUrl, env: {}, traceTimeoutMs: 1.5 }), RangeError);
  const quick = createSvcClient({ baseUrl, env: {}, traceTimeoutMs: 100 });
  t.after(() => quick.close());
  const lookup = quick.tool({ name: 'lookup', sideEffectLevel: 0 }, (args: { q: string }) => `found ${args.q}`);
  assert.equal(await lookup({ q: 'a' }, { runId: 'run_1' }), 'found a', 'a trace call that never ends is a swallowed failure');
  // The default: a buffered deadline of 900 s does not hold a traced call.
  const slowBuffered = createSvcClient({ baseUrl, env: {}, bufferedTimeoutMs: 900_000 });
  t.after(() => slowBuffered.close());
  const read = slowBuffered.tool({ name: 'read', sideEffectLevel: 0 }, () => 'read');
  assert.equal(await read({}, { runId: 'run_1' }), 'read');
});

test("a traced tool call takes the caller's signal: aborted while its evidence is pending, it rejects with the abort and the tool never runs", BOUNDED, async (t) => {
  const controller = new AbortController();
  // The first trace call arrives: the caller gives up while it is pending.
  const baseUrl = await foreignServer(t, () => controller.abort(new Error('caller gave up')));
  const client = createSvcClient({ baseUrl, env: {} });
  t.after(() => client.close());
  let ran = 0;
  const send = client.tool({ name: 'send', sideEffectLevel: 3 }, () => ++ran);
  await assert.rejects(send({}, { runId: 'run_1', signal: controller.signal }), /caller gave up/);
  assert.equal(ran, 0);
  // A signal aborted already runs nothing, traced or not.
  await assert.rejects(send({}, { signal: controller.signal }), /caller gave up/);
  assert.equal(ran, 0);
});
