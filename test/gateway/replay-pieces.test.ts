/**
 * A stored answer is replayed in pieces cut at whitespace, at least 64 characters each and about 128 at most per text
 * (src/gateway/replay-pieces.ts): a replay's events are bounded whatever the answer, and joined they are the text.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MAX_PIECES, MIN_PIECE_CHARS, jsonPieces, textPieces } from '../../src/gateway/replay-pieces.ts';
import { completionToChunks } from '../../src/gateway/stream-assembler.ts';

test('text pieces join to the text, end after whitespace, and are bounded in number', () => {
  const texts = ['', 'short', 'a b', 'x'.repeat(1_000), 'word '.repeat(10), 'a '.repeat(1_000_000), 'tabs\tand\nnewlines  '.repeat(500), 'é😀 '.repeat(3_000)];
  for (const text of texts) {
    const pieces = textPieces(text);
    assert.equal(pieces.join(''), text);
    assert.ok(pieces.length <= MAX_PIECES + 1, `${pieces.length} pieces of a ${text.length}-character text`);
    for (const piece of pieces.slice(0, -1)) {
      assert.ok(piece.length >= MIN_PIECE_CHARS - 1, `a piece of ${piece.length}`);
      assert.match(piece, /\s$/, 'a piece ends after whitespace');
    }
  }
  assert.deepEqual(textPieces('x'.repeat(1_000)), ['x'.repeat(1_000)], 'a text without whitespace stays whole');
});

test('json pieces join to the text and never split a surrogate pair', () => {
  const json = JSON.stringify({ emoji: '😀'.repeat(5_000), text: 'a'.repeat(10_000) });
  const pieces = jsonPieces(json);
  assert.equal(pieces.join(''), json);
  assert.ok(pieces.length <= MAX_PIECES + 1);
  for (const piece of pieces) assert.equal(piece, Buffer.from(piece, 'utf8').toString('utf8'), 'no lone surrogate');
});

test('a streamed hit of an answer of short words is not many times its size', () => {
  const content = 'a '.repeat(50_000);
  const completion = {
    id: 'chatcmpl-x',
    object: 'chat.completion' as const,
    created: 1,
    model: 'gpt-4o-mini',
    provider: 'p'.repeat(128),
    region: 'r'.repeat(128),
    choices: [{ index: 0, message: { role: 'assistant' as const, content, refusal: null }, finish_reason: 'stop', logprobs: null }],
  };
  const replayed = completionToChunks(completion, { id: 'chatcmpl-y', created: 2, includeUsage: false });
  const bytes = replayed.reduce((sum, chunk) => sum + JSON.stringify(chunk).length, 0);
  assert.ok(bytes < content.length * 2, `${bytes} bytes replayed for ${content.length} of content`);
});
