/**
 * The `pattern`s of declared tool schemas cannot stall the event loop (src/gateway/tool-schemas.ts): compiled without
 * `u` where they can be, so V8's linear-time fallback (set by bin/launch.mjs for svc, here by the test) ends a
 * catastrophic backtrack; a `u`-only pattern with nested quantifiers is the client's 400. Then the same through the
 * executable, against an upstream that writes the arguments that would backtrack for hours.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { compileTools, patternRegExp } from '../../src/gateway/tool-schemas.ts';
import { startFakeUpstream, sendJson } from '../support/fake-upstream.ts';
import { loadScaled } from '../support/load-scaled.ts';
import { ensureBundle, startServe, tempDir } from '../support/process.ts';

setFlagsFromString('--enable-experimental-regexp-engine-on-excessive-backtracks');

const tool = (pattern: string) => ({
  type: 'function' as const,
  function: { name: 'f', parameters: { type: 'object', properties: { a: { type: 'string', pattern } }, required: ['a'] } },
});
const call = (a: string) => ({ id: 'call_1', type: 'function' as const, function: { name: 'f', arguments: JSON.stringify({ a }) } });

test('a nested-quantifier pattern is checked in bounded time, and still matches what it should', () => {
  const declared = compileTools([tool('^(a+)+$')]);
  // Backtracking: 2^40 steps. With the linear-time fallback: a millisecond or so.
  assert.match(declared.check(call(`${'a'.repeat(40)}!`), 0)?.message ?? '', /do not match its schema/);
  assert.equal(declared.check(call('a'.repeat(40)), 0), null);
});

test('a pattern that needs the u flag keeps it, unless it nests quantifiers (400)', () => {
  const letters = compileTools([tool('^\\p{L}+$')]);
  assert.equal(letters.check(call('héllo'), 0), null);
  assert.ok(letters.check(call('h3llo'), 0));
  assert.throws(() => compileTools([tool('^(\\p{L}+)+$')]), (error: any) => error.status === 400 && /backtrack without end/.test(error.message));
  assert.equal(patternRegExp('^a+$', 'u').flags, '');
  assert.equal(patternRegExp('^\\u{1F600}$', 'u').flags, 'u');
  assert.equal(patternRegExp('^😀+$', 'u').flags, 'u');
});

test('svc answers a tool call whose arguments would backtrack for hours against the declared pattern', async (t) => {
  await ensureBundle();
  const upstream = await startFakeUpstream(t, (_request, res) =>
    sendJson(res, 200, {
      id: 'chatcmpl-up',
      object: 'chat.completion',
      created: 1700000000,
      model: 'gpt-4o-mini',
      choices: [{ index: 0, message: { role: 'assistant', content: null, tool_calls: [call(`${'a'.repeat(48)}!`)] }, finish_reason: 'tool_calls' }],
      usage: { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 },
    }),
  );
  const server = await startServe(t, tempDir(t), { CHATCOMP_API_KEY: 'sk-upstream', CHATCOMP_BASE_URL: upstream.baseUrl });
  const response = await fetch(`${server.address}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'call f' }], tools: [tool('^(a+)+$')] }),
    signal: AbortSignal.timeout(loadScaled(30_000)),
  });
  assert.equal(response.status, 502);
  const run = (await (await fetch(`${server.address}/api/v1/runs/${response.headers.get('x-svc-run-id')}`)).json()) as { run: { error: { kind: string } } };
  assert.equal(run.run.error.kind, 'invalid_tool_call');
  assert.equal((await fetch(`${server.address}/health`)).status, 200);
});
