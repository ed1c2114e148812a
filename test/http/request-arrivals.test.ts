/**
 * The turns a sliced commit takes between slices (src/http/request-arrivals.ts): one turn of the event loop, or two
 * when a request arrived during the first, so that what the request queued for that turn (its upstream call's write)
 * runs before the next slice. The order of Immediates is deterministic, so these tests read it, not timings.
 */
import assert from 'node:assert/strict';
import { channel } from 'node:diagnostics_channel';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import test, { type TestContext } from 'node:test';
import { RequestArrivals } from '../../src/http/request-arrivals.ts';

/** What node:http publishes for every request it receives. */
const requestStart = channel('http.server.request.start');

/** A RequestArrivals watching until the test ends. */
function watching(t: TestContext): RequestArrivals {
  const arrivals = new RequestArrivals();
  arrivals.watch();
  t.after(() => arrivals.stop());
  return arrivals;
}

/**
 * Take a turn, and meanwhile do what a request does in the poll before the turn's Immediate runs: arrive (when
 * `arriving`), then queue its own Immediate (its upstream call's write). The order the slice after the turn and that
 * Immediate ran in.
 */
async function orderAfterTurn(arrivals: RequestArrivals, arriving: boolean): Promise<string[]> {
  const order: string[] = [];
  const turn = arrivals.turn().then(() => order.push('slice'));
  if (arriving) requestStart.publish({});
  setImmediate(() => order.push('upstream write'));
  await turn;
  await new Promise((resolve) => setImmediate(resolve));
  return order;
}

test('with no request arriving, a turn ends before the Immediates queued after it', async (t) => {
  assert.deepEqual(await orderAfterTurn(watching(t), false), ['slice', 'upstream write']);
});

test('a request arriving during the turn goes first: the turn ends after the Immediates it queued', async (t) => {
  assert.deepEqual(await orderAfterTurn(watching(t), true), ['upstream write', 'slice']);
});

test('once stopped, arrivals are no longer counted and a turn is one turn again', async () => {
  const arrivals = new RequestArrivals();
  arrivals.watch();
  arrivals.stop();
  assert.deepEqual(await orderAfterTurn(arrivals, true), ['slice', 'upstream write']);
  assert.equal(arrivals.arrived, 0);
});

test("node:http's requests are what it counts", async () => {
  const arrivals = new RequestArrivals();
  const server = createServer((_req, res) => res.end('ok'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  arrivals.watch();
  try {
    const { port } = server.address() as AddressInfo;
    for (let i = 0; i < 3; i++) {
      await new Promise<void>((resolve, reject) => {
        request({ host: '127.0.0.1', port, path: '/' }, (res) => res.resume().on('end', resolve)).on('error', reject).end();
      });
    }
    assert.equal(arrivals.arrived, 3);
  } finally {
    arrivals.stop();
    await new Promise((resolve) => server.close(resolve));
  }
});
