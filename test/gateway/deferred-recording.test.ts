/**
 * A run's recording put off to a later turn of the event loop (a completed stream's settle, a buffered answer's when
 * its caller does not settle it) runs outside any request: a failure there is logged with the run's id and svc serves
 * on, instead of an uncaught exception ending `svc serve` with every request in flight. A stream's recording as it
 * ends early that fails lets the upstream connection go all the same.
 */
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { test } from 'node:test';
import { chatAdapter } from '../../src/gateway/chat.ts';
import { responsesAdapter } from '../../src/gateway/responses.ts';
import { parseResponsesRequest } from '../../src/gateway/wires/responses-schema.ts';
import { parseCacheControls } from '../../src/gateway/cache-controls.ts';
import { parseChatRequest } from '../../src/gateway/wires/chat-completions-schema.ts';
import type { AuthContext } from '../../src/identity/auth-context.ts';
import type { Store } from '../../src/store/store.ts';
import { build, logSink } from '../support/build.ts';
import { sleep, startFakeUpstream, startSse, streamUntilClientCloses } from '../support/fake-upstream.ts';
import { loadScaled } from '../support/load-scaled.ts';
import { tempDir } from '../support/process.ts';

const FAILURE = 'the cache refused its entry (injected)';

/** The store, with its next deferred write of a cache entry refused by a throw once `armed` (a store failure). */
function failingCacheWrite(armed: { now: boolean }) {
  return (inner: Store): Store =>
    new Proxy(inner, {
      get(target, prop) {
        if (prop === 'writeDeferred') {
          return (fn: Parameters<Store['writeDeferred']>[0], options?: Parameters<Store['writeDeferred']>[1]) => {
            if (armed.now && options?.kind === 'cache entries') {
              armed.now = false;
              throw new Error(FAILURE);
            }
            target.writeDeferred(fn, options);
          };
        }
        const value: unknown = Reflect.get(target, prop, target);
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
}

/** POST a JSON body over the local socket at `socketPath`; the answer's status, headers and body, read to its end. */
function post(socketPath: string, path: string, body: unknown): Promise<{ status: number; runId: string; text: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ socketPath, path, method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, runId: String(res.headers['x-svc-run-id']), text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

test("a completed stream's recording that fails after its last event is logged with its run id, and svc serves on", async (t) => {
  const armed = { now: false };
  const log = logSink();
  const { app } = await build(t, { log, wrapStore: failingCacheWrite(armed) });
  const socketPath = join(tempDir(t), 'svc.sock');
  await app.listen({ path: socketPath });
  // response.completed echoes the instructions: a closing frame of ~2 MB is far more than the local socket holds,
  // so its write waits for the client to read, and the stream's deferred settle runs first, on its own turn.
  const instructions = 'Answer briefly and kindly. '.repeat(80_000);
  armed.now = true;
  const streamed = await post(socketPath, '/v1/responses', { model: 'gpt-4o-mini', stream: true, instructions, input: 'first' });
  assert.equal(streamed.status, 200);
  assert.equal(armed.now, false, 'the failure was injected');
  assert.match(streamed.text, /event: response\.completed\n/, 'the stream went out whole');
  const failures = log
    .text()
    .split('\n')
    .filter((line) => line.includes(FAILURE))
    .map((line) => JSON.parse(line) as { level: number; runId?: string; msg: string });
  assert.equal(failures.length, 1, 'logged once');
  assert.equal(failures[0]!.runId, streamed.runId);
  assert.equal(failures[0]!.level, 50, 'at error level');

  const next = await post(socketPath, '/v1/chat/completions', { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'still there?' }] });
  assert.equal(next.status, 200, 'the next request is served');
});

const auth = { kind: 'open', tenantId: 'default', admin: true, tenantWide: true, platformAdmin: false, appId: null, agent: null, subject: null, mode: 'optimize', keyId: null } as unknown as AuthContext;

test("a buffered answer's recording left to the next turn that fails is logged with its run id, and svc serves on", async (t) => {
  const armed = { now: false };
  const log = logSink();
  const { app, services } = await build(t, { log, wrapStore: failingCacheWrite(armed) });
  const failures: Array<{ fields: Record<string, unknown>; message: string }> = [];
  const call = (requestId: string) => ({
    auth,
    controls: parseCacheControls({}),
    requestId,
    signal: new AbortController().signal,
    log: { error: (fields: Record<string, unknown>, message: string) => failures.push({ fields, message }) },
  });
  armed.now = true;
  const body = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'settled by itself, failing' }] };
  const result = await services.gateway.handle(chatAdapter(parseChatRequest(body), Date.now), call('req_deferred'));
  assert.equal(result.kind, 'json');
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(armed.now, false, 'the failure was injected');
  assert.equal(failures.length, 1, 'logged once');
  assert.equal(failures[0]!.fields.runId, result.runId);
  assert.equal((failures[0]!.fields.err as Error).message, FAILURE);

  const next = await app.inject({ method: 'POST', url: '/v1/chat/completions', payload: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'next' }] } });
  assert.equal(next.statusCode, 200, 'the next request is served');
});

/** The store, with its next recording of a run's ledger change refused by a throw once `armed` (a store failure). */
function failingLedgerWrite(armed: { now: boolean }) {
  return (inner: Store): Store =>
    new Proxy(inner, {
      get(target, prop) {
        if (prop === 'writeDeferredSteps' || prop === 'commitIfOverdue') {
          return (...args: unknown[]) => {
            if (armed.now) {
              armed.now = false;
              throw new Error(FAILURE);
            }
            return (Reflect.get(target, prop, target) as (...args: unknown[]) => unknown).apply(target, args);
          };
        }
        const value: unknown = Reflect.get(target, prop, target);
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
}

test("a stream the relay refused midway whose recording then fails still releases its upstream connection", async (t) => {
  const armed = { now: false };
  // A responses stream whose fourth event names an item never announced: the relay refuses it (a bad response) while
  // the upstream goes on streaming until svc lets its connection go.
  const upstream = await startFakeUpstream(t, async (_req, res) => {
    startSse(res);
    const response = { id: 'resp_up', object: 'response', created_at: 1700000000, status: 'in_progress', model: 'gpt-4o-mini', output: [], usage: null };
    const events = [
      { type: 'response.created', sequence_number: 1, response },
      { type: 'response.output_item.added', sequence_number: 2, output_index: 0, item: { id: 'msg_up', type: 'message', role: 'assistant', status: 'in_progress', content: [] } },
    ];
    for (const event of events) res.write(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
    await streamUntilClientCloses(res, (i) => {
      const event = { type: 'response.output_text.delta', sequence_number: 3 + i, item_id: 'msg_unknown', output_index: 0, content_index: 0, delta: 'w ', logprobs: [] };
      res.write(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
    });
    res.end();
  });
  const { services } = await build(t, { env: { CHATCOMP_API_KEY: 'sk-upstream', CHATCOMP_BASE_URL: upstream.baseUrl }, wrapStore: failingLedgerWrite(armed) });
  // A caller whose client stays: nothing but the pipeline itself lets the upstream go.
  const call = { auth, controls: parseCacheControls({}), requestId: 'req_refused', signal: new AbortController().signal, log: { error: () => {} } };
  const body = { model: 'gpt-4o-mini', input: 'refused midway', stream: true };
  const result = await services.gateway.handle(responsesAdapter(parseResponsesRequest(body), Date.now), call);
  assert.equal(result.kind, 'stream');
  // Read as the wire does, up to the failure's terminal event (a loop's break would close the stream before arming).
  let next = await result.items.next();
  while (!next.done && next.value.terminal !== true) next = await result.items.next();
  assert.equal(next.done, false, 'the refused stream ends with its failure');
  // Closing it records the failed run: the recording is what fails.
  armed.now = true;
  await assert.rejects(result.close(), new RegExp(FAILURE.replace(/[()]/g, '\\$&')));
  assert.equal(armed.now, false, 'the failure was injected');
  const released = await Promise.race([upstream.clientClosed().then(() => true), sleep(loadScaled(10_000)).then(() => false)]);
  assert.ok(released, 'the upstream connection was let go');
});
