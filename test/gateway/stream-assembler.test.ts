/** The chat stream assembler (src/gateway/stream-assembler.ts): when a stream is complete, and the calls it emits. */
import assert from 'node:assert/strict';
import test from 'node:test';
import { StreamAssembler } from '../../src/gateway/stream-assembler.ts';
import { compileTools } from '../../src/gateway/tool-schemas.ts';
import type { ChatChunk } from '../../src/gateway/providers/types.ts';

const chunk = (choices: ChatChunk['choices']): ChatChunk => ({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices }) as ChatChunk;

test('with n > 1, a stream is complete only when every choice finished; a finish repeated for one choice does not count for another', () => {
  const assembler = new StreamAssembler(compileTools(undefined));
  assembler.accept(chunk([{ index: 0, delta: { content: 'a' }, finish_reason: null }, { index: 1, delta: { content: 'b' }, finish_reason: null }] as never));
  assembler.accept(chunk([{ index: 0, delta: {}, finish_reason: 'stop' }] as never));
  assembler.accept(chunk([{ index: 0, delta: {}, finish_reason: 'stop' }] as never));
  assert.equal(assembler.finished, false, 'choice 1 never finished');
  assembler.accept(chunk([{ index: 1, delta: {}, finish_reason: 'length' }] as never));
  assert.equal(assembler.finished, true);
  assert.deepEqual(assembler.completion().choices.map((choice) => choice.finish_reason), ['stop', 'length']);
});

test('a tool call streamed without an id is given one; an id arriving in a later fragment is kept', () => {
  const assembler = new StreamAssembler(compileTools([{ type: 'function', function: { name: 'f' } }]));
  const out = [
    ...assembler.accept(chunk([{ index: 0, delta: { tool_calls: [{ index: 0, type: 'function', function: { name: 'f', arguments: '{}' } }] }, finish_reason: null }] as never)),
    ...assembler.accept(chunk([{ index: 0, delta: { tool_calls: [{ index: 1, id: 'call_up', type: 'function', function: { name: 'f', arguments: '' } }] }, finish_reason: null }] as never)),
    ...assembler.accept(chunk([{ index: 0, delta: { tool_calls: [{ index: 1, function: { arguments: '{}' } }] }, finish_reason: 'tool_calls' }] as never)),
  ];
  const ids = out.flatMap((c) => c.choices.flatMap((choice) => (choice.delta?.tool_calls ?? []).map((call) => call.id)));
  assert.equal(ids.length, 2);
  assert.match(ids[0]!, /^call_[0-9a-f]+$/);
  assert.equal(ids[1], 'call_up');
  assert.deepEqual(assembler.completion().choices[0]!.message.tool_calls!.map((call) => call.id), ids);
});
