/**
 * An upstream stream split between two reads at every byte position (inside a line, between a CR and its LF, inside
 * a multi-byte UTF-8 character), with each line ending the SSE format allows: the chat-completions parser and the
 * one of the other stream wires (sse.ts, here the messages provider's) read the same events whole.
 */
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { Agent } from 'undici';
import { createChatCompletionsProvider } from '../../../src/gateway/providers/chat-completions.ts';
import { createMessagesProvider } from '../../../src/gateway/providers/messages.ts';
import { sleep, startFakeUpstream, startSse } from '../../support/fake-upstream.ts';

/** Characters of two, three and four UTF-8 bytes. */
const TEXT = 'Grüße ✓ 😀';

function chatStream(eol: string): Buffer {
  const chunk = { id: 'c', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o', choices: [{ index: 0, delta: { content: TEXT }, finish_reason: 'stop' }] };
  return Buffer.from(`data: ${JSON.stringify(chunk)}${eol}${eol}data: [DONE]${eol}${eol}`);
}

function messagesStream(eol: string): Buffer {
  const delta = { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: TEXT } };
  // The delta's data over two lines: a line ending read as two would end the event between them.
  const [head, tail] = JSON.stringify(delta).split(/(?=,"delta")/);
  return Buffer.from(`event: content_block_delta${eol}data: ${head}${eol}data: ${tail}${eol}${eol}event: message_stop${eol}data: {"type":"message_stop"}${eol}${eol}`);
}

const ctx = () => ({ signal: new AbortController().signal });

test('a stream split between two reads at any byte is read whole by both parsers, with LF, CRLF or lone CR line endings', async (t) => {
  let split: { stream: Buffer; at: number } = { stream: Buffer.alloc(0), at: 0 };
  const upstream = await startFakeUpstream(t, async (_req, res) => {
    const { stream, at } = split;
    startSse(res);
    res.write(stream.subarray(0, at));
    // Long enough for svc to read the first part on its own.
    await sleep(2);
    res.end(stream.subarray(at));
  });
  const agent = new Agent();
  t.after(() => agent.close());
  const options = { apiKey: 'sk-split', baseUrl: upstream.baseUrl, dispatcher: agent };
  const chat = createChatCompletionsProvider({ name: 'chatcomp', ...options });
  const messages = createMessagesProvider({ name: 'messages', ...options });
  const textOf = {
    async chat(): Promise<string> {
      let text = '';
      for await (const chunk of await chat.streamChat({ model: 'gpt-4o', messages: [] }, ctx())) text += chunk.choices[0]?.delta.content ?? '';
      return text;
    },
    async messages(): Promise<string> {
      const seen: string[] = [];
      for await (const event of await messages.streamMessages({ model: 'claude-x', max_tokens: 10, messages: [] }, ctx())) {
        const delta = (event as { delta?: { text?: string } }).delta;
        seen.push(event.type === 'content_block_delta' ? String(delta?.text) : event.type);
      }
      return seen.join('|');
    },
  };
  for (const eol of ['\n', '\r\n', '\r']) {
    for (const [wire, stream, expected] of [['chat', chatStream(eol), TEXT], ['messages', messagesStream(eol), `${TEXT}|message_stop`]] as const) {
      for (let at = 1; at < stream.length; at += 1) {
        split = { stream, at };
        assert.equal(await textOf[wire](), expected, `${wire}, ${JSON.stringify(eol)} line endings, split after byte ${at}`);
      }
    }
  }
});
