import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sseText } from '../../src/gateway/wires/gateway-reply.ts';
import type { StreamItem } from '../../src/gateway/pipeline.ts';

function streamOf(events: number[]) {
  let closed = 0;
  async function* items(): AsyncGenerator<StreamItem<number>> {
    for (const event of events) yield { event };
  }
  return { stream: { items: items(), close: async () => void (closed += 1) }, closed: () => closed };
}

const format = { frame: (event: number) => `data: ${event}\n\n`, trailer: 'data: [DONE]\n\n' };

test('after the first frame the relay yields to the event loop, so the first bytes leave before an already-buffered burst is relayed', async () => {
  const { stream } = streamOf([1, 2, 3]);
  const frames = sseText(stream, format);
  assert.deepEqual(await frames.next(), { value: 'data: 1\n\n', done: false });
  // A macrotask queued now runs before the second frame only if the relay gives the event loop a turn (where node's
  // HTTP response uncorks its socket); a relay running on in microtasks would produce every frame first.
  let macrotaskRan = false;
  setImmediate(() => (macrotaskRan = true));
  assert.deepEqual(await frames.next(), { value: 'data: 2\n\n', done: false });
  assert.equal(macrotaskRan, true);
  // Later frames of the burst follow without further turns: they are written together.
  macrotaskRan = false;
  setImmediate(() => (macrotaskRan = true));
  assert.deepEqual(await frames.next(), { value: 'data: 3\n\n', done: false });
  assert.equal(macrotaskRan, false);
});

test('the frames, then the trailer, and the stream is closed once', async () => {
  const { stream, closed } = streamOf([1, 2]);
  const out: string[] = [];
  for await (const text of sseText(stream, format)) out.push(text);
  assert.deepEqual(out, ['data: 1\n\n', 'data: 2\n\n', 'data: [DONE]\n\n']);
  assert.equal(closed(), 1);
});
