/** The buffered call's signal: client abort or total deadline, released once the answer is read. */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import test from 'node:test';
import { GatewaySignal } from '../../../src/gateway/call-signal.ts';
import { deadlineSignal } from '../../../src/gateway/providers/deadline.ts';
import { classifyThrown } from '../../../src/gateway/providers/errors.ts';

test('the deadline aborts with a TimeoutError, classified as a timeout', async () => {
  const client = new AbortController();
  const deadline = deadlineSignal(client.signal, 20);
  // The deadline's timer does not hold the process open (a server does); this test must.
  const hold = setTimeout(() => {}, 5_000);
  await once(deadline.signal as GatewaySignal, 'abort');
  clearTimeout(hold);
  assert.equal((deadline.signal.reason as Error).name, 'TimeoutError');
  assert.equal(classifyThrown('chatcomp', deadline.signal.reason, client.signal).kind, 'timeout');
  deadline.release();
});

test('a client abort is forwarded with its reason and classified as aborted', () => {
  const client = new AbortController();
  const deadline = deadlineSignal(client.signal, 60_000);
  const reason = new Error('client disconnected');
  client.abort(reason);
  assert.equal(deadline.signal.aborted, true);
  assert.equal(deadline.signal.reason, reason);
  assert.equal(classifyThrown('chatcomp', reason, client.signal).kind, 'aborted');
  deadline.release();
});

test('after release neither the client nor the timer reaches the signal', async () => {
  const client = new AbortController();
  const deadline = deadlineSignal(client.signal, 10);
  deadline.release();
  client.abort(new Error('late'));
  await new Promise((resolve) => setTimeout(resolve, 30));
  assert.equal(deadline.signal.aborted, false);
});

test('an already aborted client signal is used as it is', () => {
  const client = new AbortController();
  client.abort(new Error('gone'));
  assert.equal(deadlineSignal(client.signal, 1_000).signal, client.signal);
});
