/**
 * The upstream answers of gateway calls in progress are bounded in total (SVC_GATEWAY_INFLIGHT_ANSWER_BYTES): a
 * buffered answer whose bytes would take those held past the budget is let go and its call answered 503 `busy` with
 * `retry-after`, not failed over; a stream is cut as an over-long one is; one answer of any size passes when no other
 * is held; small answers are not counted; what a call holds is let go once its run is recorded.
 */
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import test, { type TestContext } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { build } from '../support/build.ts';
import { completion, contentChunk, messageEvents, startFakeUpstream, startSse } from '../support/fake-upstream.ts';
import { openaiGateway } from '../support/openai-gateway.ts';
import { loadScaled } from '../support/load-scaled.ts';

const KiB = 1024;
const BUDGET = 1024 * KiB;

/** Resolves once `ready()` holds, polling; fails the test past a bound. */
async function until(ready: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + loadScaled(10_000);
  while (!ready()) {
    if (Date.now() > deadline) assert.fail(`not reached: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** A promise the fake upstreams wait on before their last bytes, and the function that lets them go on. */
function gate(): { held: Promise<void>; letGo: () => void } {
  let letGo!: () => void;
  const held = new Promise<void>((resolve) => (letGo = resolve));
  return { held, letGo };
}

/**
 * A fake upstream answering a prompt of `#hold#` with 700 KiB of text whose last 100 KiB wait for `letGo()`, `#big#`
 * with 700 KiB at once, anything else with a short answer; streamed in 8 KiB chunks when asked to.
 */
async function upstreamOfLargeAnswers(t: TestContext) {
  const { held, letGo } = gate();
  const upstream = await startFakeUpstream(t, async (req, res) => {
    const prompt = String(req.body.messages[0].content);
    const chars = prompt.startsWith('#hold#') || prompt.startsWith('#big#') ? 700 * KiB : 10;
    const waitAt = prompt.startsWith('#hold#') ? 600 * KiB : Infinity;
    if (req.body.stream) return streamAnswer(res, chars, waitAt, held);
    const body = Buffer.from(JSON.stringify(completion('x'.repeat(chars))));
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length });
    if (waitAt < body.length) {
      res.write(body.subarray(0, waitAt));
      await held;
      res.end(body.subarray(waitAt));
    } else {
      res.end(body);
    }
  });
  return { upstream, letGo };
}

async function streamAnswer(res: ServerResponse, chars: number, waitAt: number, held: Promise<void>) {
  startSse(res);
  for (let sent = 0; sent < chars; sent += 8 * KiB) {
    if (sent >= waitAt) {
      await held;
      waitAt = Infinity;
    }
    if (res.destroyed) return;
    res.write(`data: ${JSON.stringify(contentChunk('x'.repeat(Math.min(8 * KiB, chars - sent))))}\n\n`);
  }
  res.write(`data: ${JSON.stringify({ ...contentChunk(''), choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\n`);
  res.end('data: [DONE]\n\n');
}

const ask = (content: string) => ({ model: 'gpt-4o-mini', messages: [{ role: 'user' as const, content }] });

test('a buffered answer that would take the answers in progress past the budget is a 503 busy, not failed over; a lone one passes; the budget is let go', async (t) => {
  const { upstream, letGo } = await upstreamOfLargeAnswers(t);
  const { client, services } = await openaiGateway(t, upstream, {
    SVC_GATEWAY_INFLIGHT_ANSWER_BYTES: String(BUDGET),
    // A fallback the refused answer must not be sent to: the upstream made it, and another's would meet the same budget.
    CHATCOMP_FALLBACK_API_KEY: 'sk-fallback',
  });

  const first = client.chat.completions.create(ask('#hold# one'));
  await until(() => services.answers.heldBytes() >= 600 * KiB, 'the first answer held');

  // Small answers are neither counted nor refused.
  const small = await client.chat.completions.create(ask('short'));
  assert.equal(small.choices[0]!.message.content!.length, 10);

  const requestsBefore = upstream.requests.length;
  const refused = await client.chat.completions.create(ask('#big# two')).then(
    () => assert.fail('the second large answer was served'),
    (error: unknown) => error,
  );
  assert.ok(refused instanceof OpenAI.APIError, String(refused));
  assert.equal(refused.status, 503);
  assert.equal(refused.headers?.get('retry-after'), '1');
  assert.equal((refused.error as { code?: string }).code, 'busy');
  assert.match(refused.message, /SVC_GATEWAY_INFLIGHT_ANSWER_BYTES/);
  assert.equal(upstream.requests.length, requestsBefore + 1, 'the refused call was failed over');

  letGo();
  assert.equal((await first).choices[0]!.message.content!.length, 700 * KiB);
  await until(() => services.answers.heldBytes() === 0, 'the answers let go');

  // Alone, an answer past the budget passes (one answer of any allowed size always does).
  const lone = await client.chat.completions.create(ask('#big# three'));
  assert.equal(lone.choices[0]!.message.content!.length, 700 * KiB);
  const twoAtOnce = await Promise.all([client.chat.completions.create(ask('#big# four')), client.chat.completions.create(ask('short again'))]);
  assert.equal(twoAtOnce[0].choices[0]!.message.content!.length, 700 * KiB);
  await until(() => services.answers.heldBytes() === 0, 'the answers let go');
});

test('a stream whose bytes would take the answers in progress past the budget is cut as an over-long one is; the budget is let go', async (t) => {
  const { upstream, letGo } = await upstreamOfLargeAnswers(t);
  const { client, services } = await openaiGateway(t, upstream, { SVC_GATEWAY_INFLIGHT_ANSWER_BYTES: String(BUDGET) });

  const first = streamed(await client.chat.completions.create({ ...ask('#hold# one'), stream: true }));
  await until(() => services.answers.heldBytes() >= 600 * KiB, 'the first stream held');

  const second = await streamed(await client.chat.completions.create({ ...ask('#big# two'), stream: true }));
  assert.ok(second.cut instanceof Error, 'the second stream was not cut');
  assert.ok(second.text.length > 0 && second.text.length < 700 * KiB, `the second stream relayed ${second.text.length} characters`);

  letGo();
  assert.equal((await first).text.length, 700 * KiB);
  await until(() => services.answers.heldBytes() === 0, 'the streams let go');

  // Alone, the same stream passes whole.
  const lone = await streamed(await client.chat.completions.create({ ...ask('#big# three'), stream: true }));
  assert.equal(lone.cut, null);
  assert.equal(lone.text.length, 700 * KiB);
  await until(() => services.answers.heldBytes() === 0, 'the stream let go');
});

/**
 * A fake upstream streaming, for `#hold#`, 150 KiB of text in 8 KiB events of which the last wait for `letGo()`; for
 * `#tokens#`, 8,000 token events of 4 characters each, ~220 bytes apiece as OpenAI's are (`obfuscation` pads them):
 * ~1.7 MB received for ~32,000 characters; for `#large#`, 500 KiB of text in 8 KiB events; for `#endless#`, an
 * event's line 900 KiB long that never ends.
 */
async function upstreamOfStreamShapes(t: TestContext) {
  const { held, letGo } = gate();
  const upstream = await startFakeUpstream(t, async (req, res) => {
    const prompt = String(req.body.messages[0].content);
    startSse(res);
    const send = (chunk: unknown) => res.write(`data: ${JSON.stringify(chunk)}\n\n`);
    if (prompt.startsWith('#endless#')) {
      // One event's line that never ends: the parser holds it all.
      res.write(`data: ${JSON.stringify(contentChunk('')).slice(0, -20)}`);
      for (let sent = 0; sent < 900 * KiB && !res.destroyed; sent += 8 * KiB) res.write('x'.repeat(8 * KiB));
      return void res.end();
    }
    if (prompt.startsWith('#tokens#')) {
      for (let at = 0; at < 8000; at += 1) send(contentChunk('abcd', { obfuscation: 'Zm9v'.repeat(20) }));
    } else {
      const chars = prompt.startsWith('#hold#') ? 150 * KiB : 500 * KiB;
      for (let sent = 0; sent < chars; sent += 8 * KiB) {
        if (prompt.startsWith('#hold#') && sent + 8 * KiB >= chars) await held;
        if (res.destroyed) return;
        send(contentChunk('x'.repeat(Math.min(8 * KiB, chars - sent))));
      }
    }
    send({ ...contentChunk(''), choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] });
    res.end('data: [DONE]\n\n');
  });
  return { upstream, letGo };
}

/** The text of a chat stream, and what cut it (null when it ended whole). */
async function streamed(stream: AsyncIterable<OpenAI.Chat.Completions.ChatCompletionChunk>): Promise<{ text: string; cut: unknown }> {
  let text = '';
  try {
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    return { text, cut: null };
  } catch (error) {
    return { text, cut: error };
  }
}

test('a stream is counted by what svc holds of it, not its bytes as received: token events pass beside a held stream, large text events are cut', async (t) => {
  const { upstream, letGo } = await upstreamOfStreamShapes(t);
  const { client, services } = await openaiGateway(t, upstream, { SVC_GATEWAY_INFLIGHT_ANSWER_BYTES: String(BUDGET) });

  const holder = streamed(await client.chat.completions.create({ ...ask('#hold# one'), stream: true }));
  // ~142 KiB of its text held (counted at about twice that).
  await until(() => services.answers.heldBytes() >= 100 * KiB, 'the first stream held');

  // ~1.7 MB received, more than the budget with the first stream, for ~32,000 characters held (~320 KB).
  const tokens = await streamed(await client.chat.completions.create({ ...ask('#tokens# two'), stream: true }));
  assert.equal(tokens.cut, null, `the token stream was cut: ${String(tokens.cut)}`);
  assert.equal(tokens.text.length, 8000 * 4);

  // ~510 KB received, which fits beside the first stream's bytes, for 500 KiB of text held at about twice that.
  const large = await streamed(await client.chat.completions.create({ ...ask('#large# three'), stream: true }));
  assert.ok(large.cut instanceof Error, 'the large-text stream was not cut');
  assert.match(String((large.cut as Error).message), /SVC_GATEWAY_INFLIGHT_ANSWER_BYTES/);
  assert.ok(large.text.length > 0 && large.text.length < 500 * KiB, `the large-text stream relayed ${large.text.length} characters`);

  // An unfinished line is held by the parser before any event: counted, the stream is refused as busy.
  const endless = await client.chat.completions.create({ ...ask('#endless# four'), stream: true }).then(
    () => assert.fail('the endless line was streamed'),
    (error: unknown) => error,
  );
  assert.ok(endless instanceof OpenAI.APIError, String(endless));
  assert.equal(endless.status, 503);

  letGo();
  const first = await holder;
  assert.equal(first.cut, null);
  assert.equal(first.text.length, 150 * KiB);
  await until(() => services.answers.heldBytes() === 0, 'the streams let go');
});

/**
 * A fake messages upstream streaming, for `#hold#`, 152 KiB of text in 8 KiB text deltas of which the last wait for
 * `letGo()`; for `#blocks#`, 500 KiB of text carried in the `content_block_start` of 8 KiB text blocks, no deltas (an
 * upstream may send a block's text there: the SDKs join it with its deltas').
 */
async function messagesUpstreamOfBlocks(t: TestContext) {
  const { held, letGo } = gate();
  const upstream = await startFakeUpstream(t, async (req, res) => {
    const prompt = String(req.body.messages[0].content);
    startSse(res);
    const send = (event: Record<string, unknown>) => res.write(`event: ${String(event.type)}\ndata: ${JSON.stringify(event)}\n\n`);
    const start = messageEvents('')[0]![1];
    send(start);
    let index = 0;
    if (prompt.startsWith('#blocks#')) {
      for (; index < (500 * KiB) / (8 * KiB); index += 1) {
        send({ type: 'content_block_start', index, content_block: { type: 'text', text: 'x'.repeat(8 * KiB) } });
        send({ type: 'content_block_stop', index });
      }
    } else {
      send({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
      for (let sent = 0; sent < 152 * KiB; sent += 8 * KiB) {
        if (sent + 8 * KiB >= 152 * KiB) await held;
        if (res.destroyed) return;
        send({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'x'.repeat(8 * KiB) } });
      }
      send({ type: 'content_block_stop', index: 0 });
    }
    send({ type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 5 } });
    send({ type: 'message_stop' });
    res.end();
  });
  return { upstream, letGo };
}

test("a messages stream's blocks kept whole as their content_block_start gave them are counted as what it holds", async (t) => {
  const { upstream, letGo } = await messagesUpstreamOfBlocks(t);
  const { app, services } = await build(t, {
    env: { MESSAGES_API_KEY: 'sk-ant-api03-Qx7Rk2Lm9Vt4Wz8N', MESSAGES_BASE_URL: upstream.baseUrl.replace(/\/v1$/, ''), SVC_GATEWAY_INFLIGHT_ANSWER_BYTES: String(BUDGET) },
  });
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  const client = new Anthropic({ baseURL: address, apiKey: 'local-dev-key', maxRetries: 0, timeout: loadScaled(20_000) });
  const ask = (content: string) => ({ model: 'claude-sonnet-4-5', max_tokens: 1024, messages: [{ role: 'user' as const, content }] });

  const holder = client.messages.stream(ask('#hold# one')).finalMessage();
  await until(() => services.answers.heldBytes() >= 100 * KiB, 'the first stream held');

  // ~510 KB received, which fits beside the first stream, for 500 KiB of text held in its blocks.
  const blocks = await client.messages.stream(ask('#blocks# two')).finalMessage().then(
    (message) => message,
    (error: unknown) => error,
  );
  assert.ok(blocks instanceof Error, `the stream of large blocks was not cut: ${(blocks as Anthropic.Message).content?.length} blocks relayed`);
  assert.match(blocks.message, /SVC_GATEWAY_INFLIGHT_ANSWER_BYTES|answers in progress/);

  letGo();
  const first = await holder;
  assert.equal((first.content[0] as Anthropic.TextBlock).text.length, 152 * KiB);
  await until(() => services.answers.heldBytes() === 0, 'the streams let go');
});
