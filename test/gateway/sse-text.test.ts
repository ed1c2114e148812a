import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EventEmitter } from 'node:events';
import { sseText, writeFrames } from '../../src/gateway/wires/gateway-reply.ts';
import type { StreamItem } from '../../src/gateway/pipeline.ts';

function streamOf(events: number[]) {
  let closed = 0;
  async function* items(): AsyncGenerator<StreamItem<number>> {
    for (const event of events) yield { event };
  }
  return { stream: { items: items(), close: async () => void (closed += 1), recorded: () => null }, closed: () => closed };
}

const format = { frame: (event: number) => `data: ${event}\n\n`, trailer: 'data: [DONE]\n\n' };

test('after the first frame the relay lets queued ticks run (node uncorks the response socket in one), so the first bytes leave before an already-buffered burst is relayed', async () => {
  const { stream } = streamOf([1, 2, 3]);
  const frames = sseText(stream, format);
  assert.deepEqual(await frames.next(), { value: 'data: 1\n\n', done: false });
  // Writing the first frame queues node's uncork as a tick. A tick queued now runs before the second frame only if
  // the relay waits for the queued ticks; a relay running on in microtasks would produce every frame first.
  let tickRan = false;
  process.nextTick(() => (tickRan = true));
  assert.deepEqual(await frames.next(), { value: 'data: 2\n\n', done: false });
  assert.equal(tickRan, true);
  // Later frames of the burst follow without waiting: they are written together.
  tickRan = false;
  process.nextTick(() => (tickRan = true));
  assert.deepEqual(await frames.next(), { value: 'data: 3\n\n', done: false });
  assert.equal(tickRan, false);
});

test('the frames, then the trailer; a complete stream is left to its writer to close, one that ends early is closed', async () => {
  const complete = streamOf([1, 2]);
  const out: string[] = [];
  for await (const text of sseText(complete.stream, format)) out.push(text);
  assert.deepEqual(out, ['data: 1\n\n', 'data: 2\n\n', 'data: [DONE]\n\n']);
  assert.equal(complete.closed(), 0, 'writeFrames closes it once the response has ended');

  const stopped = streamOf([1, 2, 3]);
  for await (const text of sseText(stopped.stream, format)) if (text === 'data: 1\n\n') break;
  assert.equal(stopped.closed(), 1, 'the consumer stopped early');

  let closed = 0;
  async function* failing(): AsyncGenerator<StreamItem<number>> {
    yield { event: 1 };
    yield { event: 9, terminal: true };
  }
  const terminal: string[] = [];
  for await (const text of sseText({ items: failing(), close: async () => void (closed += 1), recorded: () => null }, format)) terminal.push(text);
  assert.deepEqual(terminal, ['data: 1\n\n', 'data: 9\n\n'], 'a terminal event ends the stream, without the trailer');
  assert.equal(closed, 1);
});

test('while answers wait for their runs\' commit, a complete stream\'s trailer waits for it, and a failing stream\'s error after its close', async () => {
  let commit!: () => void;
  const committed = new Promise<void>((resolve) => (commit = resolve));
  let asked = 0;
  const { stream } = streamOf([1]);
  const frames = sseText({ ...stream, recorded: () => (asked++, committed) }, format);
  assert.deepEqual(await frames.next(), { value: 'data: 1\n\n', done: false });
  const trailer = frames.next();
  let trailerCame = false;
  void trailer.then(() => (trailerCame = true));
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(trailerCame, false, 'the trailer waits for the commit');
  commit();
  assert.deepEqual(await trailer, { value: 'data: [DONE]\n\n', done: false });
  assert.equal(asked, 1);

  // A stream failing midway: closed first (its run settled), then the error frame waits for the commit.
  async function* failing(): AsyncGenerator<StreamItem<number>> {
    yield { event: 1 };
    yield { event: 9, terminal: true };
  }
  const order: string[] = [];
  let commitFailure!: () => void;
  const failureCommitted = new Promise<void>((resolve) => (commitFailure = resolve));
  const failed = sseText(
    {
      items: failing(),
      close: async () => void order.push('closed'),
      recorded: () => (order.push('asked'), failureCommitted.then(() => void order.push('committed'))),
    },
    format,
  );
  assert.deepEqual(await failed.next(), { value: 'data: 1\n\n', done: false });
  const error = failed.next();
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(order, ['closed', 'asked'], 'closed before the failure is sent, then waiting for the commit');
  commitFailure();
  assert.deepEqual(await error, { value: 'data: 9\n\n', done: false });
  assert.deepEqual(await failed.next(), { value: undefined, done: true });
  assert.deepEqual(order, ['closed', 'asked', 'committed']);

  // When answers do not wait, the failure goes out once the stream is closed.
  const sent: string[] = [];
  for await (const text of sseText({ items: failing(), close: async () => undefined, recorded: () => null }, format)) sent.push(text);
  assert.deepEqual(sent, ['data: 1\n\n', 'data: 9\n\n']);
});

test("a wire's closing event (messages' message_stop) waits for the commit as a trailer does, and goes out at once when answers do not wait", async () => {
  const closing = { frame: (event: number) => `event: ${event === 0 ? 'stop' : 'delta'}\n\n`, closing: (event: number) => event === 0 };
  let commit!: () => void;
  const committed = new Promise<void>((resolve) => (commit = resolve));
  const { stream } = streamOf([1, 0]);
  const frames = sseText({ ...stream, recorded: () => committed }, closing);
  assert.deepEqual(await frames.next(), { value: 'event: delta\n\n', done: false });
  const stop = frames.next();
  let stopCame = false;
  void stop.then(() => (stopCame = true));
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(stopCame, false, 'the closing event waits for the commit');
  commit();
  assert.deepEqual(await stop, { value: 'event: stop\n\n', done: false });
  assert.deepEqual(await frames.next(), { value: undefined, done: true });

  const sent: string[] = [];
  for await (const text of sseText(streamOf([1, 0]).stream, closing)) sent.push(text);
  assert.deepEqual(sent, ['event: delta\n\n', 'event: stop\n\n']);

  // Were an event to follow the closing one, it would keep its place after it.
  const after: string[] = [];
  for await (const text of sseText(streamOf([0, 1]).stream, closing)) after.push(text);
  assert.deepEqual(after, ['event: stop\n\n', 'event: delta\n\n']);
});

/** A stand-in for node's ServerResponse: `write` answers false once `capacity` frames are buffered. */
class FakeResponse extends EventEmitter {
  statusCode = 0;
  headers: Record<string, unknown> = {};
  written: string[] = [];
  destroyed = false;
  ended = false;
  constructor(public capacity: number) {
    super();
  }
  setHeader(name: string, value: unknown) {
    this.headers[name] = value;
  }
  write(text: string) {
    this.written.push(text);
    return this.written.length < this.capacity;
  }
  end() {
    this.ended = true;
  }
  destroy() {
    this.destroyed = true;
    this.emit('close');
  }
}

function replyOver(res: FakeResponse) {
  return { raw: res, statusCode: 200, getHeaders: () => ({ 'content-type': 'text/event-stream', absent: undefined }), log: { error() {} } } as never;
}

function countingFrames(total: number) {
  let pulled = 0;
  let closed = 0;
  async function* frames(): AsyncGenerator<string> {
    try {
      while (pulled < total) {
        pulled += 1;
        yield `data: ${pulled}\n\n`;
      }
    } finally {
      closed += 1;
    }
  }
  return { frames: frames(), pulled: () => pulled, stream: { close: async () => void (closed += 1) }, closed: () => closed };
}

test('frames are written with the reply headers, and a full response is not fed until it drains (backpressure)', async () => {
  const res = new FakeResponse(2);
  const source = countingFrames(5);
  const done = writeFrames(replyOver(res), source.frames, source.stream);
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.equal(res.statusCode, 200);
  assert.deepEqual(res.headers, { 'content-type': 'text/event-stream' });
  assert.equal(source.pulled(), 2, 'the second write answered false: nothing more is pulled until drain');
  res.capacity = Infinity;
  res.emit('drain');
  await done;
  assert.equal(source.pulled(), 5);
  assert.deepEqual(res.written, ['data: 1\n\n', 'data: 2\n\n', 'data: 3\n\n', 'data: 4\n\n', 'data: 5\n\n']);
  assert.equal(res.ended, true);
});

test("a stream whose run cannot be recorded as it closes is logged, and the write still resolves (an unhandled rejection would end the process)", async () => {
  const res = new FakeResponse(Infinity);
  const logged: unknown[] = [];
  const reply = { raw: res, statusCode: 200, getHeaders: () => ({}), log: { error: (entry: unknown) => logged.push(entry) } } as never;
  async function* frames(): AsyncGenerator<string> {
    yield 'data: 1\n\n';
  }
  await writeFrames(reply, frames(), { close: async () => Promise.reject(new Error('recording failed')) });
  assert.equal(res.ended, true, 'the answer went out whole');
  assert.equal(logged.length, 1);
  assert.match(String((logged[0] as { err: Error }).err.message), /recording failed/);
});

test('a client gone while the response is full stops the frames and closes the stream', async () => {
  const res = new FakeResponse(1);
  const source = countingFrames(100);
  const done = writeFrames(replyOver(res), source.frames, source.stream);
  await new Promise((resolve) => setTimeout(resolve, 10));
  res.destroy();
  await done;
  assert.ok(source.pulled() <= 2, `pulled ${source.pulled()} frames`);
  assert.equal(res.ended, false);
  assert.ok(source.closed() >= 1, 'the generator stopped and the stream was closed');
});

test('a complete stream is closed (its run recorded) only after the response has ended (node writes its last bytes then)', async () => {
  const res = new FakeResponse(Infinity);
  const source = countingFrames(3);
  let endedAtClose: boolean | null = null;
  const stream = { close: async () => void (endedAtClose ??= res.ended) };
  await writeFrames(replyOver(res), source.frames, stream);
  assert.deepEqual(res.written, ['data: 1\n\n', 'data: 2\n\n', 'data: 3\n\n']);
  assert.equal(endedAtClose, true);
});
