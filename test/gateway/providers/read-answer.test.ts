/**
 * A buffered answer's body read whole (src/gateway/providers/bodies.ts `readAnswer`): each chunk is decoded as it
 * comes and let go, so a large answer is not held as its chunks, their join and its text at once (~3x its bytes at
 * the read's end); the text is the body's UTF-8 all the same, a character split between chunks and a leading
 * byte-order mark included.
 */
import assert from 'node:assert/strict';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Readable } from 'node:stream';
import test from 'node:test';
import { readAnswer } from '../../../src/gateway/providers/bodies.ts';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

type Body = Parameters<typeof readAnswer>[0];

const tooLarge = () => new Error('too large');

test('a chunk read is let go once the next has been read', async () => {
  // Only the WeakRef holds the first chunk: the reader's hold is what the test sees.
  const firstRef = new WeakRef(Buffer.alloc(256 * 1024, 'a'));
  let heldAfterNext: boolean | null = null;
  async function* chunks(): AsyncGenerator<Buffer> {
    yield firstRef.deref()!;
    yield Buffer.from('b');
    // The reader took the second chunk and asks for a third: it has no reason to hold the first.
    await new Promise((resolve) => setImmediate(resolve));
    gc();
    heldAfterNext = firstRef.deref() !== undefined;
    yield Buffer.from('c');
  }
  const text = await readAnswer(chunks() as unknown as Body, 1024 * 1024, tooLarge);
  assert.equal(text.length, 256 * 1024 + 2);
  assert.equal(heldAfterNext, false, 'the first chunk was still held when the third was read');
});

test('the text is the body as UTF-8: a character split between chunks, a leading byte-order mark dropped', async () => {
  const bytes = Buffer.from('\ufeff{"content":"snø 😀 ✓"}', 'utf8');
  // One byte at a time: every multi-byte character and the mark are split.
  const text = await readAnswer(Readable.from([...bytes].map((byte) => Buffer.from([byte]))) as unknown as Body, 1024, tooLarge);
  assert.equal(text, '{"content":"snø 😀 ✓"}');
  await assert.rejects(readAnswer(Readable.from([bytes]) as unknown as Body, bytes.length - 1, tooLarge), /too large/);
});
