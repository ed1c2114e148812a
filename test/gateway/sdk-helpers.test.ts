/**
 * The official clients' higher-level helpers through svc, where they read more of svc's answers than a plain call
 * does: the messages SDK's tool runner holds its conversation in a server-side message thread and recovers from a lost
 * one by what the upstream's error says in `error.details`.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { betaZodTool } from '@anthropic-ai/sdk/helpers/beta/zod';
import { z } from 'zod';
import { build } from '../support/build.ts';
import { finishedRuns } from '../support/finished-runs.ts';
import { messageToEvents } from '../../src/gateway/wire-replay.ts';
import { sendJson, startFakeUpstream, startSse } from '../support/fake-upstream.ts';

const MESSAGES_KEY = 'sk-ant-api03-Qx7Rk2Lm9Vt4Wz8N';

test("the messages SDK's tool runner recovers from a message thread the upstream lost: the upstream's 404 reaches it with its error.details (thread_not_found), so it replays the whole conversation under a new thread, buffered and streamed; details were dropped and the runner threw the 404", async (t) => {
  const upstream = await startFakeUpstream(t, (request, res) => {
    if (request.body.thread?.type === 'continue') {
      const { previous_message_id } = request.body.thread;
      // An upstream quoting svc's own key in its details: masked there as in its message.
      const details = { error_code: 'thread_not_found', previous_message_id, ...(previous_message_id === 'msg_gone' ? { account: MESSAGES_KEY } : {}) };
      return sendJson(res, 404, { type: 'error', error: { type: 'not_found_error', message: 'The thread was not found.', details } });
    }
    const answered = request.body.messages.some((message: { content: unknown }) => Array.isArray(message.content) && message.content.some((block: { type: string }) => block.type === 'tool_result'));
    const content = answered ? [{ type: 'text', text: 'Sunny in Oslo.' }] : [{ type: 'tool_use', id: 'toolu_1', name: 'weather', input: { city: 'Oslo' } }];
    const message = {
      id: `msg_${upstream.requests.length}`,
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-4-5',
      content,
      stop_reason: answered ? 'end_turn' : 'tool_use',
      stop_sequence: null,
      usage: { input_tokens: 20, output_tokens: 5 },
    };
    if (!request.body.stream) return sendJson(res, 200, message);
    startSse(res);
    for (const event of messageToEvents(message as never)) res.write(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
    res.end();
  });
  const { app } = await build(t, { env: { MESSAGES_API_KEY: MESSAGES_KEY, MESSAGES_BASE_URL: upstream.baseUrl.replace(/\/v1$/, '') } });
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  const client = new Anthropic({ baseURL: address, apiKey: 'local-dev-key', maxRetries: 0 });
  const weather = betaZodTool({ name: 'weather', description: 'Weather for a city', inputSchema: z.object({ city: z.string() }), run: ({ city }) => `sunny in ${city}` });
  for (const stream of [false, true]) {
    const before = upstream.requests.length;
    const runner = client.beta.messages.toolRunner({ model: 'claude-sonnet-4-5', max_tokens: 256, messages: [{ role: 'user', content: `weather in Oslo? ${stream}` }], tools: [weather], stream });
    const last = await runner.runUntilDone();
    assert.deepEqual(last.content, [{ type: 'text', text: 'Sunny in Oslo.' }], `stream ${stream}`);
    // The thread's first turn, its continuation the upstream lost, and the whole conversation again under a new thread.
    const sent = upstream.requests.slice(before).map((request) => `${request.body.thread?.type} ${request.body.messages.length}`);
    assert.deepEqual(sent, ['create 1', 'continue 1', 'create 3'], `stream ${stream}`);
  }
  const runs = (await finishedRuns(app)).map((run: { status: string }) => run.status).sort();
  assert.deepEqual(runs, ['completed', 'completed', 'completed', 'completed', 'failed', 'failed']);

  // The relayed body: the upstream's details as it wrote them, its secrets masked, beside the type and message.
  const refused = await fetch(`${address}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }], thread: { type: 'continue', previous_message_id: 'msg_gone' } }),
  });
  assert.equal(refused.status, 404);
  const body = (await refused.json()) as { error: Record<string, unknown> };
  assert.deepEqual(body.error, { type: 'not_found_error', message: 'The thread was not found.', details: { error_code: 'thread_not_found', previous_message_id: 'msg_gone', account: '[redacted]' } });
});

test("the messages SDK's tool runner, run twice on the same question, continues the thread the upstream holds: its thread's first turn is not served from the exact cache, whose answer has an id the upstream never held (its continue was a 404 thread_not_found, a failed run and the conversation replayed)", async (t) => {
  // An upstream that holds each thread at the id of its last answer, and loses none.
  const heads = new Set<string>();
  const upstream = await startFakeUpstream(t, (request, res) => {
    const thread = request.body.thread;
    if (thread?.type === 'continue' && !heads.delete(thread.previous_message_id)) {
      const details = { error_code: 'thread_not_found', previous_message_id: thread.previous_message_id };
      return sendJson(res, 404, { type: 'error', error: { type: 'not_found_error', message: 'The thread was not found.', details } });
    }
    const answered = request.body.messages.some((message: { content: unknown }) => Array.isArray(message.content) && message.content.some((block: { type: string }) => block.type === 'tool_result'));
    const id = `msg_${upstream.requests.length}`;
    heads.add(id);
    const content = answered ? [{ type: 'text', text: 'Sunny in Oslo.' }] : [{ type: 'tool_use', id: 'toolu_1', name: 'weather', input: { city: 'Oslo' } }];
    sendJson(res, 200, { id, type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content, stop_reason: answered ? 'end_turn' : 'tool_use', stop_sequence: null, usage: { input_tokens: 20, output_tokens: 5 } });
  });
  const { app } = await build(t, { env: { MESSAGES_API_KEY: MESSAGES_KEY, MESSAGES_BASE_URL: upstream.baseUrl.replace(/\/v1$/, '') } });
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  const client = new Anthropic({ baseURL: address, apiKey: 'local-dev-key', maxRetries: 0 });
  const weather = betaZodTool({ name: 'weather', description: 'Weather for a city', inputSchema: z.object({ city: z.string() }), run: ({ city }) => `sunny in ${city}` });
  for (const time of ['first', 'second']) {
    const before = upstream.requests.length;
    const runner = client.beta.messages.toolRunner({ model: 'claude-sonnet-4-5', max_tokens: 256, messages: [{ role: 'user', content: 'weather in Oslo?' }], tools: [weather] });
    const last = await runner.runUntilDone();
    assert.deepEqual(last.content, [{ type: 'text', text: 'Sunny in Oslo.' }], time);
    const sent = upstream.requests.slice(before).map((request) => `${request.body.thread?.type} ${request.body.messages.length}`);
    assert.deepEqual(sent, ['create 1', 'continue 1'], time);
  }
  const runs = (await finishedRuns(app)).map((run: { status: string; route: string }) => `${run.status} ${run.route}`);
  assert.deepEqual(runs, Array(4).fill('completed live'));
});
