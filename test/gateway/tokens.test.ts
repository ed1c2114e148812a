import assert from 'node:assert/strict';
import { test } from 'node:test';
import { countChatTokens, countTokens, decodeTokens, encodeTokens, EXACT_COUNT_MAX_CHARS, truncateToTokens } from '../../src/gateway/tokens.ts';

test('countTokens uses the o200k_base encoding', () => {
  assert.equal(countTokens(''), 0);
  assert.equal(countTokens('Hello world, this is a test'), 7);
  assert.equal(countTokens('tiktoken is great!'), 6);
  assert.equal(decodeTokens(encodeTokens('round trip ✓ ünïcode')), 'round trip ✓ ünïcode');
  assert.equal(countTokens('<|endoftext|>') > 1, true, 'special-token spellings are ordinary text');
});

// No clock (a timed assertion failed on a loaded machine at 2.3 s): a run twice as long is exactly twice the tokens,
// counted and encoded alike; a quadratic merge would hold the file past its timeout.
test('a very long run without whitespace is counted in bounded time', () => {
  assert.equal(countTokens('a'.repeat(100_000)), 12_500);
  assert.equal(countTokens('a'.repeat(200_000)), 25_000);
  assert.equal(encodeTokens('a'.repeat(200_000)).length, 25_000);
});

// No clock here: with js-tiktoken's merge, quadratic in a piece's length, this test ran for hours (32,000 spaces in one
// prompt held the server for 70 s) and test/run.mjs failed it at its timeout; each count takes milliseconds now.
test('long runs of whitespace, newlines, punctuation, digits, marks, emoji and ideographs are counted like short ones', () => {
  // The longest whitespace token is 128 spaces, so 512 KiB of them is 4,096 tokens; with a word each side of 64 KiB
  // of them, 515 (the last space goes with the "y").
  assert.equal(countTokens(' '.repeat(512 * 1024)), 4096);
  assert.equal(countTokens(`x${' '.repeat(64 * 1024)}y`), 515);
  const units = [' ', '\n', '\n\n\n ', '\r\n', '\t', '\u3000', '\u00a0', '.', '-', '/\n', '7', 'a', '中', '\u0301', '👨‍👩‍👧‍👦'];
  for (const unit of units) {
    const half = countTokens(`x${unit.repeat(8 * 1024)}`);
    const whole = countTokens(`x${unit.repeat(16 * 1024)}`);
    // A run twice as long is twice the tokens, give or take the ends: no slicing, no cap, no estimate.
    assert.ok(half > 0 && Math.abs(whole - 2 * half) <= 2, `${JSON.stringify(unit)}: ${half} then ${whole}`);
  }
  let noSpaces = '';
  for (let i = 0; i < 128 * 1024; i++) noSpaces += String.fromCharCode(33 + ((i * 7919) % 94)); // printable ASCII, no blank
  assert.ok(countTokens(noSpaces) > noSpaces.length / 8);
});

test('a text of more than 100,000 tokens is counted, encoded and truncated (a ~500 KB prompt overflowed the stack)', () => {
  const sentence = 'lorem ipsum dolor sit amet ';
  const text = sentence.repeat(40_000); // 1.08 MB, ~200,000 tokens
  const count = countTokens(text);
  assert.ok(count > 150_000, `${count} tokens`);
  assert.equal(encodeTokens(text).length, count);
  // With a long run in it (one piece of 500 letters), the text around it is encoded as before.
  const withRun = `${text}${'x'.repeat(500)}${text}`;
  assert.ok(countTokens(withRun) > 2 * count);
  const cut = truncateToTokens(text, 10);
  assert.ok(text.startsWith(cut) && cut.length > sentence.length && countTokens(cut) <= 10, cut);
});

test('a text beyond 1 MiB is counted on its first MiB and the rest at the same rate, in bounded time', () => {
  const text = 'lorem ipsum dolor sit amet, consectetur adipiscing elit. '.repeat(60_000); // 3.4 MB
  const estimate = countTokens(text);
  const exact = encodeTokens(text).length;
  assert.ok(Math.abs(estimate - exact) / exact < 0.01, `${estimate} against ${exact}`);
  // Only the first MiB is encoded (a 30 MB text costs what that does, not ~30 times it): the count is that part's,
  // extrapolated.
  const huge = text.repeat(9);
  const head = encodeTokens(huge.slice(0, EXACT_COUNT_MAX_CHARS)).length;
  assert.equal(countTokens(huge), head + Math.ceil(((huge.length - EXACT_COUNT_MAX_CHARS) * head) / EXACT_COUNT_MAX_CHARS));
  assert.ok(countTokens(huge) > 9 * exact * 0.99);
});

test('truncateToTokens keeps a prefix of at most N tokens', () => {
  const text = 'one two three four five six';
  assert.equal(truncateToTokens(text, 100), text);
  assert.equal(truncateToTokens(text, 2), 'one two');
  assert.equal(truncateToTokens(text, 0), '');
  assert.equal(truncateToTokens('𓀀 one', 1), '', 'a cut character is dropped, not shown as U+FFFD');
  // A long run of U+FFFD inside the kept prefix: trimming the end with /\uFFFD+$/u, quadratic in the run, took ~13 s.
  const replacement = `${'\uFFFD'.repeat(200_000)}x`;
  assert.equal(truncateToTokens(`${replacement} y z`, countTokens(replacement)), replacement);
});

test('countChatTokens adds the per-message overhead, names, tool calls and tool declarations', () => {
  const base = countChatTokens({ messages: [{ role: 'user', content: 'hello' }] });
  // 3 (reply priming) + 3 (message) + role + content
  assert.equal(base, 3 + 3 + countTokens('user') + countTokens('hello'));
  const named = countChatTokens({ messages: [{ role: 'user', content: 'hello', name: 'ann' }] });
  assert.equal(named, base + 1 + countTokens('ann'));
  const parts = countChatTokens({ messages: [{ role: 'user', content: [{ type: 'text', text: 'hello' }] }] });
  assert.equal(parts, base);
  const image = countChatTokens({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x', detail: 'low' } }] }] });
  assert.equal(image, 3 + 3 + countTokens('user') + 85);
  const withTools = countChatTokens({
    messages: [{ role: 'user', content: 'hello' }],
    tools: [{ type: 'function', function: { name: 'f', description: 'Does f.', parameters: { type: 'object', properties: { a: { type: 'string', enum: ['x', 'y'] } } } } }],
  });
  assert.ok(withTools > base + 12);
  const toolCall = countChatTokens({
    messages: [{ role: 'assistant', content: null, tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{"a":"x"}' } }] }],
  });
  assert.ok(toolCall > 3 + 3 + countTokens('assistant'));
});
