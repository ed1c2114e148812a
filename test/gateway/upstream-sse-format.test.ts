/**
 * How svc reads an upstream's event stream on the three streaming wires (chat completions, responses, messages): the
 * forms the SSE format allows (WHATWG HTML, "Parsing an event stream") and streams that break, with the official
 * clients against a listening svc over a fake upstream. A well-formed stream reaches the client whole, its run
 * completed and its answer cached; a broken one is an error, its run failed with why, and nothing cached (the same
 * request again goes upstream). CRLF, comments and reads split mid-line are in providers/chat-completions.test.ts.
 */
import assert from 'node:assert/strict';
import test, { type TestContext } from 'node:test';
import type { ServerResponse } from 'node:http';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { build, json } from '../support/build.ts';
import { messageEvents, sleep, startFakeUpstream, untilClientCloses, type FakeUpstream } from '../support/fake-upstream.ts';
import { loadScaled } from '../support/load-scaled.ts';

const WIRES = ['chat', 'responses', 'messages'] as const;
type WireName = (typeof WIRES)[number];

/** Text with characters of two, three and four UTF-8 bytes. */
const TEXT = 'Grüße ✓ 😀, done';

/** An upstream event: its `event:` name (none on the chat wire) and its data. */
type UpstreamEvent = [name: string | null, data: Record<string, unknown> | '[DONE]'];

function chatEvents(text: string): UpstreamEvent[] {
  const chunk = (delta: unknown, finish: string | null = null) => ({ id: 'chatcmpl-up', object: 'chat.completion.chunk', created: 1700000000, model: 'gpt-4o-mini', choices: [{ index: 0, delta, finish_reason: finish }] });
  return [
    [null, chunk({ role: 'assistant', content: '' })],
    [null, chunk({ content: text })],
    [null, chunk({}, 'stop')],
    [null, { ...chunk({}), choices: [], usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 } }],
    [null, '[DONE]'],
  ];
}

function responsesEvents(text: string): UpstreamEvent[] {
  const part = { type: 'output_text', text, annotations: [], logprobs: [] };
  const message = { id: 'msg_up', type: 'message', role: 'assistant', status: 'completed', content: [part] };
  const response = { id: 'resp_up', object: 'response', created_at: 1700000000, status: 'in_progress', model: 'gpt-4o-mini', output: [], error: null, incomplete_details: null, instructions: null, metadata: {}, parallel_tool_calls: true, temperature: 1, tool_choice: 'auto', tools: [], top_p: 1 };
  const usage = { input_tokens: 5, input_tokens_details: { cached_tokens: 0 }, output_tokens: 5, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 10 };
  const at = { item_id: 'msg_up', output_index: 0, content_index: 0 };
  const events: Array<Record<string, unknown>> = [
    { type: 'response.created', response },
    { type: 'response.output_item.added', output_index: 0, item: { ...message, status: 'in_progress', content: [] } },
    { type: 'response.content_part.added', ...at, part: { ...part, text: '' } },
    { type: 'response.output_text.delta', ...at, delta: text, logprobs: [] },
    { type: 'response.output_text.done', ...at, text, logprobs: [] },
    { type: 'response.content_part.done', ...at, part },
    { type: 'response.output_item.done', output_index: 0, item: message },
    { type: 'response.completed', response: { ...response, status: 'completed', output: [message], usage } },
  ];
  return events.map((event, index) => [event.type as string, { ...event, sequence_number: index }]);
}

const eventsOf = (wire: WireName, text = TEXT) => (wire === 'chat' ? chatEvents(text) : wire === 'responses' ? responsesEvents(text) : messageEvents(text));

/** How the upstream writes its events: each a choice the SSE format leaves to the server. */
interface Form {
  eol?: string;
  /** `data:{...}` and `event:name`, without the optional space. */
  noSpace?: boolean;
  /** `: ping` between events and a comment line inside each. */
  comments?: boolean;
  /** An `event:` line before each chat chunk, as some compatible servers send. */
  chatEventNames?: boolean;
  /** Each event's JSON over several `data:` lines (split between its members, after a comma outside strings). */
  dataLines?: boolean;
  bom?: boolean;
  /** A `retry:` field first and an `id:` on each event. */
  retryAndIds?: boolean;
}

function streamText(wire: WireName, form: Form, events = eventsOf(wire)): string {
  const eol = form.eol ?? '\n';
  const space = form.noSpace ? '' : ' ';
  let out = form.bom ? '\uFEFF' : '';
  if (form.retryAndIds) out += `retry: 3000${eol}${eol}`;
  for (const [index, [name, data]] of events.entries()) {
    if (form.comments) out += `: ping${eol}${eol}`;
    const eventName = name ?? (form.chatEventNames ? (data === '[DONE]' ? 'done' : 'chat.completion.chunk') : null);
    if (eventName) out += `event:${space}${eventName}${eol}`;
    if (form.comments) out += `: inside an event${eol}`;
    if (form.retryAndIds) out += `id:${space}${index}${eol}`;
    const text = data === '[DONE]' ? data : JSON.stringify(data);
    const lines = form.dataLines ? text.split(/(?<=,)(?=")/) : [text];
    for (const line of lines) out += `data:${space}${line}${eol}`;
    out += eol;
  }
  return out;
}

/** svc over `upstream` for all three wires, listening, with both official clients pointed at it. */
async function gateway(t: TestContext, upstream: FakeUpstream, env: Record<string, string> = {}) {
  const built = await build(t, { env: { CHATCOMP_API_KEY: 'sk-chat-upstream', CHATCOMP_BASE_URL: upstream.baseUrl, MESSAGES_API_KEY: 'sk-messages-upstream', MESSAGES_BASE_URL: upstream.baseUrl.replace(/\/v1$/, ''), ...env } });
  const address = await built.app.listen({ port: 0, host: '127.0.0.1' });
  return {
    app: built.app,
    openai: new OpenAI({ baseURL: `${address}/v1`, apiKey: 'sk-local', maxRetries: 0, timeout: loadScaled(60_000) }),
    anthropic: new Anthropic({ baseURL: address, apiKey: 'sk-local', maxRetries: 0 }),
  };
}
type Gateway = Awaited<ReturnType<typeof gateway>>;

/** The prompt the upstream reads a case's name from (its first word); its own each time, so never a cache hit. */
let asked = 0;
const promptFor = (name: string) => `${name} #${++asked}`;
const caseOf = (body: { messages?: Array<{ content: string }>; input?: string }) => (body.messages?.[0]?.content ?? body.input ?? '').split(' ')[0]!;

interface Outcome {
  text?: string;
  /** The error the client threw, or the responses wire's `error` or `response.failed` event. */
  error?: string;
  runId: string | null;
  route: string | null;
}

/** One streamed call of `prompt` on `wire` through its official client: the text it read, or its error. */
async function streamed(gw: Gateway, wire: WireName, prompt: string): Promise<Outcome> {
  let runId: string | null = null;
  let route: string | null = null;
  let text = '';
  try {
    if (wire === 'chat') {
      const { data, response } = await gw.openai.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: prompt }], stream: true }).withResponse();
      [runId, route] = [response.headers.get('x-svc-run-id'), response.headers.get('x-svc-route')];
      for await (const chunk of data) text += chunk.choices[0]?.delta.content ?? '';
    } else if (wire === 'responses') {
      const { data, response } = await gw.openai.responses.create({ model: 'gpt-4o-mini', input: prompt, stream: true }).withResponse();
      [runId, route] = [response.headers.get('x-svc-run-id'), response.headers.get('x-svc-route')];
      for await (const event of data) {
        if (event.type === 'response.output_text.delta') text += event.delta;
        // A failure before the stream's first event is an `error` event, after it a `response.failed`.
        if (event.type === 'error') return { error: event.message, runId, route };
        if (event.type === 'response.failed') return { error: event.response.error?.message ?? '', runId, route };
      }
    } else {
      const { data, response } = await gw.anthropic.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: prompt }], stream: true }).withResponse();
      [runId, route] = [response.headers.get('x-svc-run-id'), response.headers.get('x-svc-route')];
      for await (const event of data) if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') text += event.delta.text;
    }
    return { text, runId, route };
  } catch (error) {
    const headers = (error as { headers?: Headers }).headers;
    return { error: String((error as Error).message), runId: runId ?? headers?.get('x-svc-run-id') ?? null, route };
  }
}

async function runOf(gw: Gateway, runId: string | null) {
  assert.ok(runId, 'the answer names its run');
  return json(await gw.app.inject({ url: `/api/v1/runs/${runId}` })).run;
}

/** The case's stream reaches the client whole, its run completed, and the same request again is a cache hit. */
async function expectRelayed(gw: Gateway, upstream: FakeUpstream, wire: WireName, name: string, text = TEXT) {
  const prompt = promptFor(name);
  const first = await streamed(gw, wire, prompt);
  assert.equal(first.error, undefined, `${wire} ${name}`);
  assert.equal(first.text, text, `${wire} ${name}`);
  assert.equal((await runOf(gw, first.runId)).status, 'completed', `${wire} ${name}`);
  const calls = upstream.requests.length;
  const again = await streamed(gw, wire, prompt);
  assert.deepEqual([again.route, again.text], ['exact_cache', text], `${wire} ${name}: the repeat is a cache hit`);
  assert.equal(upstream.requests.length, calls);
}

/** The case's stream is an error to the client, its run failed as `kind` with `message`, and nothing is cached. */
async function expectFailed(gw: Gateway, upstream: FakeUpstream, wire: WireName, name: string, kind: string, message: RegExp) {
  const prompt = promptFor(name);
  const first = await streamed(gw, wire, prompt);
  assert.ok(first.error !== undefined, `${wire} ${name}: the client sees an error`);
  const run = await runOf(gw, first.runId);
  assert.deepEqual([run.status, run.error?.kind], ['failed', kind], `${wire} ${name}`);
  assert.match(run.error.message, message, `${wire} ${name}`);
  const calls = upstream.requests.length;
  const again = await streamed(gw, wire, prompt);
  assert.equal(again.route === 'exact_cache', false, `${wire} ${name}: a broken stream is not cached`);
  assert.equal(upstream.requests.length, calls + 1);
}

const wireOf = (url: string): WireName => (url.endsWith('/chat/completions') ? 'chat' : url.endsWith('/responses') ? 'responses' : 'messages');

function startStream(res: ServerResponse, contentType = 'text/event-stream'): void {
  res.writeHead(200, { 'content-type': contentType });
  res.flushHeaders();
}

const WELL_FORMED: Record<string, Form> = {
  nospace: { noSpace: true },
  comments: { comments: true },
  eventnames: { chatEventNames: true },
  datalines: { dataLines: true },
  bom: { bom: true },
  retryids: { retryAndIds: true },
  crlfall: { eol: '\r\n', comments: true, dataLines: true, retryAndIds: true, noSpace: true },
};

test('every form of event stream the SSE format allows reaches the client whole on each wire, its run completed and its answer cached', async (t) => {
  const upstream = await startFakeUpstream(t, async (request, res) => {
    const form = WELL_FORMED[caseOf(request.body)]!;
    startStream(res);
    res.end(streamText(wireOf(request.url), form));
  });
  const gw = await gateway(t, upstream);
  for (const wire of WIRES) for (const name of Object.keys(WELL_FORMED)) await expectRelayed(gw, upstream, wire, name);
});

test('a stream written a byte per write (each multi-byte character split) and one of a 1 MB line reach the client whole and are cached', async (t) => {
  const long = `${'x'.repeat(1 << 20)}${TEXT}`;
  const upstream = await startFakeUpstream(t, async (request, res) => {
    const wire = wireOf(request.url);
    startStream(res);
    if (caseOf(request.body) === 'long') return void res.end(streamText(wire, {}, eventsOf(wire, long)));
    for (const byte of Buffer.from(streamText(wire, { eol: '\r\n' }))) {
      res.write(Buffer.from([byte]));
      await new Promise((resolve) => setImmediate(resolve));
    }
    res.end();
  });
  const gw = await gateway(t, upstream);
  for (const wire of WIRES) {
    await expectRelayed(gw, upstream, wire, 'bytes');
    await expectRelayed(gw, upstream, wire, 'long', long);
  }
});

test('a stream cut off mid-event, ended mid-event, or silent past the idle timeout is an error after the text before it, its run failed and nothing cached', async (t) => {
  const upstream = await startFakeUpstream(t, async (request, res) => {
    const text = Buffer.from(streamText(wireOf(request.url), {}));
    // Inside the last event (each wire's last event is longer than 10 bytes), after the text's.
    const cut = text.subarray(0, text.length - 10);
    startStream(res);
    const name = caseOf(request.body);
    if (name === 'ended') return void res.end(cut);
    res.write(cut);
    if (name === 'reset') {
      await sleep(20);
      return void res.destroy();
    }
    await untilClientCloses(res);
  });
  const gw = await gateway(t, upstream, { SVC_PROVIDER_STREAM_IDLE_TIMEOUT_MS: '500' });
  for (const wire of WIRES) {
    await expectFailed(gw, upstream, wire, 'reset', 'network', /connection to the upstream failed/);
    await expectFailed(gw, upstream, wire, 'ended', 'bad_response', /ended (without \[DONE\]|before its terminal event)/);
    await expectFailed(gw, upstream, wire, 'silent', 'timeout', /did not answer in time/);
  }
});

test('a stream answered as JSON (an error body), with an empty body, or with an event that is empty or not JSON is a 502 before any event, its run failed and nothing cached', async (t) => {
  const upstream = await startFakeUpstream(t, async (request, res) => {
    const wire = wireOf(request.url);
    const name = caseOf(request.body);
    if (name === 'json') {
      startStream(res, 'application/json');
      return void res.end(JSON.stringify({ error: { message: 'the model is overloaded (key sk-abcdefgh12345678)', type: 'server_error' } }));
    }
    startStream(res);
    if (name === 'empty') return void res.end();
    res.end(`data:${name === 'emptydata' ? '' : ' {"type": '}\n\n${streamText(wire, {})}`);
  });
  const gw = await gateway(t, upstream);
  for (const wire of WIRES) {
    // The upstream's own words, masked, on the run's error, on every wire.
    await expectFailed(gw, upstream, wire, 'json', 'bad_response', /expected an event stream, got application\/json: the model is overloaded \(key \[redacted\]\)/);
    await expectFailed(gw, upstream, wire, 'empty', 'bad_response', /ended (without \[DONE\]|before its terminal event)/);
    // The format dispatches `data:` alone as an event whose data is empty; it is no JSON, as the official clients
    // read it too (JSON.parse('') throws in both).
    await expectFailed(gw, upstream, wire, 'emptydata', 'bad_response', /not valid JSON/);
    await expectFailed(gw, upstream, wire, 'notjson', 'bad_response', /not valid JSON/);
  }
});

test('a stream whose lines end in a lone CR, as the format allows, reaches the client whole on each wire, its run completed and its answer cached', async (t) => {
  const forms: Record<string, Form> = { cr: { eol: '\r' }, crall: { eol: '\r', comments: true, dataLines: true, retryAndIds: true, noSpace: true } };
  const upstream = await startFakeUpstream(t, async (request, res) => {
    startStream(res);
    res.end(streamText(wireOf(request.url), forms[caseOf(request.body)]!));
  });
  const gw = await gateway(t, upstream);
  for (const wire of WIRES) for (const name of Object.keys(forms)) await expectRelayed(gw, upstream, wire, name);
});

test('an event ended by a lone CR is relayed when it comes, not held until the next event\'s bytes', async (t) => {
  const upstream = await startFakeUpstream(t, async (request, res) => {
    const events = eventsOf(wireOf(request.url));
    // Up to and with the text's event, each in its own write; then nothing until the client goes.
    const upToText = events.slice(0, events.findIndex(([, data]) => data !== '[DONE]' && JSON.stringify(data).includes('Grüße')) + 1);
    startStream(res);
    for (const event of upToText) {
      res.write(streamText('messages', { eol: '\r' }, [event]));
      await sleep(10);
    }
    await untilClientCloses(res);
  });
  // Held, the text would come only when the idle timeout ends the stream with an error.
  const gw = await gateway(t, upstream, { SVC_PROVIDER_STREAM_IDLE_TIMEOUT_MS: '5000' });
  const textOf = async (wire: WireName, prompt: string): Promise<string> => {
    if (wire === 'chat') {
      for await (const chunk of await gw.openai.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: prompt }], stream: true })) {
        if (chunk.choices[0]?.delta.content) return chunk.choices[0].delta.content;
      }
    } else if (wire === 'responses') {
      for await (const event of await gw.openai.responses.create({ model: 'gpt-4o-mini', input: prompt, stream: true })) if (event.type === 'response.output_text.delta') return event.delta;
    } else {
      for await (const event of await gw.anthropic.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: prompt }], stream: true })) {
        if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') return event.delta.text;
      }
    }
    return 'the stream ended without its text';
  };
  for (const wire of WIRES) assert.equal(await textOf(wire, promptFor('held')), TEXT, wire);
});
