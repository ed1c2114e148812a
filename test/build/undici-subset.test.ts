/**
 * bin/undici-subset.cjs, which svc's bundle loads in place of undici's index (bin/build.mjs): the same objects as the
 * index, and a `request` (a copy of the index's) that behaves as the index's does.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import * as undici from 'undici';
import { ROOT } from '../support/process.ts';

const subset = createRequire(import.meta.url)(`${ROOT}/bin/undici-subset.cjs`) as Pick<typeof undici, 'Dispatcher' | 'Agent' | 'buildConnector' | 'request'>;

/** Both requests, typed loosely enough for the inputs undici's types leave out (`opts.path`, wrong types). */
type LooseRequest = (url: unknown, opts?: unknown) => ReturnType<typeof undici.request>;
const ourRequest = subset.request as LooseRequest;
const theirRequest = undici.request as LooseRequest;

let server: Server;
let base: string;
before(async () => {
  server = createServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ method: req.method, url: req.url }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => new Promise<void>((resolve) => server.close(() => resolve())));

test('the subset exports the very objects undici exports, and nothing undici does not', () => {
  assert.equal(subset.Dispatcher, undici.Dispatcher);
  assert.equal(subset.Agent, undici.Agent);
  assert.equal(subset.buildConnector, undici.buildConnector);
  for (const name of Object.keys(subset)) assert.ok(name in undici, name);
  assert.equal(typeof new subset.Agent().request, 'function');
});

test("the subset's request answers as undici's does", async () => {
  const dispatcher = new undici.Agent();
  after(() => dispatcher.close());
  const calls: Array<[string | URL, Record<string, unknown> | undefined]> = [
    [`${base}/a?x=1`, undefined],
    [new URL(`${base}/b`), { method: 'POST', body: 'x' }],
    [base, { path: 'c/d?e=f', method: 'DELETE' }],
    [base, { path: '/e', dispatcher }],
    [`${base}/f`, { body: 'defaults to PUT' }],
  ];
  for (const [url, opts] of calls) {
    const ours = await ourRequest(url, opts);
    const theirs = await theirRequest(url, opts);
    assert.equal(ours.statusCode, theirs.statusCode);
    assert.deepEqual(await ours.body.json(), await theirs.body.json());
  }
});

test("the subset's request rejects what undici's rejects, with the same errors", () => {
  const bad: Array<[unknown, unknown]> = [
    ['', undefined],
    [42, undefined],
    [base, 'opts'],
    [base, { path: 7 }],
    [base, { agent: {} }],
  ];
  for (const [url, opts] of bad) {
    const caught = (fn: () => unknown) => {
      try {
        fn();
      } catch (error) {
        return { name: (error as Error).name, message: (error as Error).message };
      }
      return null;
    };
    const ours = caught(() => ourRequest(url, opts));
    assert.ok(ours, `no error for ${String(url)}`);
    assert.deepEqual(ours, caught(() => theirRequest(url, opts)));
  }
});
