/**
 * What svc relays on the chat-completions wire when an upstream's answer differs from OpenAI's: the official `openai`
 * client against a listening svc over a fake upstream, each answer checked against the OpenAPI document.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import { sendJson, startFakeUpstream } from '../support/fake-upstream.ts';
import { openaiGateway } from '../support/openai-gateway.ts';
import { validateAgainst } from '../support/openapi.ts';

test("a buffered answer without fields the OpenAPI document requires (Ollama's has no logprobs nor refusal; some servers leave out object, id, created, model, a choice's index, the role) reaches the client with them, live and from the cache", async (t) => {
  const usage = { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 };
  const answers: Record<string, unknown> = {
    // Ollama's compatible endpoint.
    ollama: { id: 'chatcmpl-1', object: 'chat.completion', created: 1700000000, model: 'llama3', system_fingerprint: 'fp_ollama', choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }], usage },
    bare: { choices: [{ message: { content: 'hi' }, finish_reason: 'stop' }, { message: { content: 'ho' }, finish_reason: 'length' }], usage },
  };
  const upstream = await startFakeUpstream(t, (request, res) => sendJson(res, 200, answers[request.body.messages[0].content]));
  const { client } = await openaiGateway(t, upstream);
  for (const name of Object.keys(answers)) {
    for (const route of ['live', 'exact_cache']) {
      const { data, response } = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: name }] }).withResponse();
      assert.equal(response.headers.get('x-svc-route'), route);
      assert.equal(validateAgainst('CreateChatCompletionResponse', data), null, `${name} ${route}: ${JSON.stringify(data)}`);
      assert.deepEqual(data.choices.map((choice) => [choice.index, choice.logprobs, choice.message.role, choice.message.refusal]), data.choices.map((_, index) => [index, null, 'assistant', null]));
      assert.equal(data.choices[0]!.message.content, 'hi');
    }
  }
  // What the upstream did send stays as it sent it.
  const ollama = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'ollama' }] });
  assert.equal(ollama.model, 'llama3');
  assert.equal(ollama.system_fingerprint, 'fp_ollama');
  // Where the upstream sent none: the model asked for, as svc names a cache hit's own id and time.
  const bare = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'bare' }] });
  assert.equal(bare.model, 'gpt-4o-mini');
  assert.equal(bare.object, 'chat.completion');
});
