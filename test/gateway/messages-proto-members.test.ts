/**
 * An upstream's member named `__proto__` (an own member of the parsed JSON, as any other name is) on the messages
 * wire: relayed and replayed as it came, never dropped by a copy that assigns it (Object.assign sets the copy's
 * prototype instead) while the rest of the object goes out. Read from svc's raw event stream: the SDKs drop the
 * member themselves.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import { build } from '../support/build.ts';
import { messageEvents, sendJson, startFakeUpstream, startSse } from '../support/fake-upstream.ts';

const WEATHER = { name: 'get_weather', description: 'Weather for a city', input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } };

/** An object with an own `__proto__` member, as JSON.parse makes one. */
const withProtoMember = (rest: Record<string, unknown>): Record<string, unknown> => ({ ...JSON.parse('{"__proto__":{"tier":"own member"}}'), ...rest });

async function gateway(t: test.TestContext, handler: Parameters<typeof startFakeUpstream>[1]) {
  const upstream = await startFakeUpstream(t, handler);
  const built = await build(t, { env: { MESSAGES_API_KEY: 'sk-messages-secret', MESSAGES_BASE_URL: upstream.baseUrl.replace(/\/v1$/, '') } });
  const address = await built.app.listen({ port: 0, host: '127.0.0.1' });
  let counter = 0;
  const send = async (stream: boolean, same: boolean): Promise<string> => {
    if (!same) counter += 1;
    const response = await fetch(`${address}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': 'local-dev-key', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 64, stream, messages: [{ role: 'user', content: `ask ${counter}` }], tools: [WEATHER] }),
    });
    const text = await response.text();
    assert.equal(response.status, 200, text);
    return text;
  };
  /** The data of each event of a streamed answer to one request (`same` repeats the last one). */
  const streamed = async (same = false): Promise<Array<Record<string, unknown>>> =>
    (await send(true, same)).split('\n').filter((line) => line.startsWith('data: ')).map((line) => JSON.parse(line.slice(6)));
  /** A buffered answer to one request. */
  const buffered = async (same = false): Promise<Record<string, unknown>> => JSON.parse(await send(false, same));
  return { upstream, streamed, buffered };
}

const ownProto = (value: unknown) => Object.hasOwn(value as object, '__proto__') && Object.getPrototypeOf(value) === Object.prototype;

test("a live message_delta whose usage has a __proto__ member and no output count keeps the member beside the count svc fills in", async (t) => {
  const { streamed } = await gateway(t, (_req, res) => {
    startSse(res);
    const events = messageEvents('A few words.');
    events[5] = ['message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: withProtoMember({}) }];
    for (const [name, data] of events) res.write(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`);
    res.end();
  });
  const delta = (await streamed()).find((event) => event.type === 'message_delta')!;
  const usage = delta.usage as Record<string, unknown>;
  assert.ok(typeof usage.output_tokens === 'number' && usage.output_tokens > 0, JSON.stringify(usage));
  assert.ok(ownProto(usage), `relayed ${JSON.stringify(usage)}`);
  assert.deepEqual(JSON.parse(JSON.stringify(usage)).__proto__, { tier: 'own member' });
});

test("a cached answer replayed as a stream keeps its blocks' __proto__ members on their content_block_start, as the live answer had them (text, tool_use, thinking)", async (t) => {
  const blocks = [
    withProtoMember({ type: 'thinking', thinking: 'hmm', signature: 'sig' }),
    withProtoMember({ type: 'text', text: 'hello' }),
    withProtoMember({ type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Oslo' } }),
  ];
  const { upstream, streamed, buffered } = await gateway(t, (_req, res) =>
    sendJson(res, 200, { id: 'msg_up', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: blocks, stop_reason: 'tool_use', stop_sequence: null, usage: { input_tokens: 12, output_tokens: 5 } }),
  );
  const live = await buffered();
  for (const block of live.content as unknown[]) assert.ok(ownProto(block), `live: ${JSON.stringify(block)}`);
  // The same request streamed is a hit, the stored answer replayed as its event stream.
  const starts = (await streamed(true)).filter((event) => event.type === 'content_block_start').map((event) => event.content_block);
  assert.equal(upstream.requests.length, 1, 'the repeat is a cache hit');
  assert.equal(starts.length, 3);
  for (const start of starts) assert.ok(ownProto(start), `replayed: ${JSON.stringify(start)}`);
});
