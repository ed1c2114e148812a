/**
 * `svc serve` on a port or address it cannot listen on: a new user's first start beside another server, or with a
 * host this machine does not have, stops with exit 1 and a line naming the address, the cause and the flag to change,
 * not node's bare `listen EADDRINUSE: address already in use 127.0.0.1:8787`.
 */
import assert from 'node:assert/strict';
import { createServer, type AddressInfo } from 'node:net';
import test, { before } from 'node:test';
import { ensureBundle, runSvc, tempDir } from '../support/process.ts';

before(ensureBundle);

test('a port another process listens on: the port named, and --port or SVC_PORT to choose another', async (t) => {
  const holder = createServer();
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
  t.after(() => holder.close());
  const port = (holder.address() as AddressInfo).port;

  const result = await runSvc(['serve', '--port', String(port), '--data-dir', tempDir(t)]);

  assert.equal(result.code, 1, result.stderr);
  assert.equal(
    result.stderr,
    `svc: cannot listen on 127.0.0.1:${port}: the port is in use by another process (EADDRINUSE); ` +
      'stop that process, or choose another port with --port or SVC_PORT (0 picks a free one)\n',
  );
});

test('an address no interface of this machine has: --host or SVC_HOST to choose one it has', async (t) => {
  // 192.0.2.1 is TEST-NET-1 (RFC 5737), documentation's own, assigned to no real interface.
  const result = await runSvc(['serve', '--port', '0', '--host', '192.0.2.1', '--data-dir', tempDir(t)]);

  assert.equal(result.code, 1, result.stderr);
  assert.equal(
    result.stderr,
    'svc: cannot listen on 192.0.2.1: no interface of this machine has that address (EADDRNOTAVAIL); ' +
      'choose one it has with --host or SVC_HOST (127.0.0.1, or 0.0.0.0 for every interface)\n',
  );
});

test('a host name that does not resolve: named, with --host or SVC_HOST', async (t) => {
  // .invalid never resolves (RFC 6761), with or without a network.
  const result = await runSvc(['serve', '--port', '0', '--host', 'nosuchhost.invalid', '--data-dir', tempDir(t)]);

  assert.equal(result.code, 1, result.stderr);
  assert.match(result.stderr, /^svc: cannot listen on nosuchhost\.invalid: the name does not resolve to an address \((ENOTFOUND|EAI_AGAIN)\); /);
  assert.match(result.stderr, /with --host or SVC_HOST/);
});
