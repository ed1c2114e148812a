/**
 * Whether a failed upstream call had written its request (src/gateway/providers/request-written.ts): the registry's
 * providers mark a failure after the write (`afterRequestSent`, which makes its cost unknown) and not one before it,
 * also when svc's deadline fired while the connection was still being made, which undici reports only once it is
 * made, with the deadline's reason, before anything is written. Driven against a real listening fake upstream.
 */
import assert from 'node:assert/strict';
import test, { type TestContext } from 'node:test';
import { Agent, buildConnector } from 'undici';
import { loadConfig } from '../../../src/config.ts';
import { GatewaySignal } from '../../../src/gateway/call-signal.ts';
import { createProviderRegistry } from '../../../src/gateway/providers/registry.ts';
import { rejectsWith } from '../../support/provider-errors.ts';
import { startFakeUpstream } from '../../support/fake-upstream.ts';

const DEADLINE_MS = 200;
/**
 * The deadline of a call that must have written its request before it passes: long enough for a loaded machine to
 * connect and write (at 200 ms, a test run beside others once saw the deadline pass first), short for the test.
 */
const DEADLINE_AFTER_WRITE_MS = 2_000;

/** The registry's live chat provider for `baseUrl`, calling through `dispatcher` when given, with a short deadline. */
async function liveProvider(t: TestContext, baseUrl: string, dispatcher?: Agent, deadlineMs = DEADLINE_MS) {
  const registry = createProviderRegistry({
    config: loadConfig({ CHATCOMP_API_KEY: 'sk-upstream', CHATCOMP_BASE_URL: baseUrl }, { dataDir: null }),
    timeouts: { bufferedMs: deadlineMs },
    ...(dispatcher ? { fetchDispatcher: dispatcher } : {}),
  });
  t.after(async () => {
    await registry.close();
    await dispatcher?.close();
  });
  return (await registry.route('chat_completions', 'gpt-4o-mini', 'default')).candidates[0]!;
}

const request = { model: 'gpt-4o-mini', messages: [{ role: 'user' as const, content: 'hi' }] };

test('a call whose deadline passed after its request was written is marked as having reached the upstream', async (t) => {
  const upstream = await startFakeUpstream(t, () => undefined);
  const provider = await liveProvider(t, upstream.baseUrl, undefined, DEADLINE_AFTER_WRITE_MS);
  const failure = await rejectsWith(provider.chat(request, { signal: new GatewaySignal() }), 'timeout');
  assert.equal(upstream.requests.length, 1);
  assert.equal(failure.afterRequestSent, true);
});

test('a call whose deadline passed while its connection was being made is not: nothing was written', async (t) => {
  const upstream = await startFakeUpstream(t, () => undefined);
  const connect = buildConnector({});
  // The connection is made only after the deadline passed.
  const slowToConnect = new Agent({ connect: (options, callback) => void setTimeout(() => connect(options, callback), DEADLINE_MS * 3) });
  const provider = await liveProvider(t, upstream.baseUrl, slowToConnect);
  const failure = await rejectsWith(provider.chat(request, { signal: new GatewaySignal() }), 'timeout');
  assert.equal(upstream.requests.length, 0);
  assert.equal(failure.afterRequestSent, false);
});

test('a call whose connection was refused is not', async (t) => {
  const provider = await liveProvider(t, 'http://127.0.0.1:9/v1');
  const failure = await rejectsWith(provider.chat(request, { signal: new GatewaySignal() }), 'network');
  assert.equal(failure.afterRequestSent, false);
});
