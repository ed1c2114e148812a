/** A buffered answer's run is completed after the answer is handed over: at once through HTTP, by itself otherwise. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { chatAdapter } from '../../src/gateway/chat.ts';
import { parseChatRequest } from '../../src/gateway/wires/chat-completions-schema.ts';
import { parseCacheControls } from '../../src/gateway/cache-controls.ts';
import type { AuthContext } from '../../src/identity/auth-context.ts';
import { build } from '../support/build.ts';

/** A run's deferred recording does not fail here: a failure it logs fails the test. */
const failOnLog = { error: (fields: Record<string, unknown>, message: string) => assert.fail(`${message}: ${String(fields.err)}`) };

const auth = { kind: 'open', tenantId: 'default', admin: true, tenantWide: true, platformAdmin: false, appId: null, agent: null, subject: null, mode: 'optimize', keyId: null } as unknown as AuthContext;

test('a buffered run whose caller never settles it is still completed and cached, on the next turn of the event loop', async (t) => {
  const { services } = await build(t);
  const body = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'settle by itself' }] };
  const call = () => ({ auth, controls: parseCacheControls({}), requestId: 'req_settle', signal: new AbortController().signal, log: failOnLog });
  const result = await services.gateway.handle(chatAdapter(parseChatRequest(body), Date.now), call());
  assert.equal(result.kind, 'json');
  assert.equal(result.route, 'live');
  await new Promise((resolve) => setImmediate(resolve));
  await services.store.flush();
  const run = await services.runs.find(auth, result.runId);
  assert.equal(run.status, 'completed');
  const again = await services.gateway.handle(chatAdapter(parseChatRequest(body), Date.now), call());
  assert.equal(again.route, 'exact_cache', 'the answer was stored');
});

test("a completed stream's run is recorded when the stream is closed, and by itself on the next turn if it never is", async (t) => {
  const { services } = await build(t);
  const call = () => ({ auth, controls: parseCacheControls({}), requestId: 'req_settle_stream', signal: new AbortController().signal, log: failOnLog });
  for (const closes of [true, false]) {
    const body = { model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: `settle a stream (closed: ${closes})` }] };
    const result = await services.gateway.handle(chatAdapter(parseChatRequest(body), Date.now), call());
    assert.equal(result.kind, 'stream');
    if (result.kind !== 'stream') return;
    let events = 0;
    for await (const _item of result.items) events += 1;
    assert.ok(events > 1, 'the stream relayed its events');
    if (closes) await result.close();
    else await new Promise((resolve) => setImmediate(resolve));
    await services.store.flush();
    const run = await services.runs.find(auth, result.runId);
    assert.equal(run.status, 'completed', `closed: ${closes}`);
    const again = await services.gateway.handle(chatAdapter(parseChatRequest(body), Date.now), call());
    assert.equal(again.route, 'exact_cache', `the answer was stored (closed: ${closes})`);
    if (again.kind === 'stream') await again.close();
  }
});
