/**
 * `--url` through something that compresses answers unasked (a proxy between the CLI and svc): bin/svc as a child
 * process against a node:http server that sends every answer content-encoded, whatever the request says.
 */
import assert from 'node:assert/strict';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import test, { before } from 'node:test';
import { foreignServer } from '../support/foreign-server.ts';
import { ensureBundle, runSvc } from '../support/process.ts';

before(ensureBundle);

const KEYS_PAGE = {
  keys: [{ id: 'key_1', name: 'ci', mode: 'optimize', appId: null, admin: false, tokenPrefix: 'svc_ab', status: 'active', createdAt: '2026-01-01T00:00:00.000Z', revokedAt: null }],
  pagination: { limit: 50, offset: 0, total: 1, hasMore: false },
};

const ENCODERS: Record<string, (body: Buffer) => Buffer> = {
  gzip: gzipSync,
  deflate: deflateSync,
  br: brotliCompressSync,
  'gzip, br': (body) => brotliCompressSync(gzipSync(body)),
};

test('an answer content-encoded unasked (gzip, deflate, br, or several) is decoded before it is read', async (t) => {
  // It was read as it came: the compressed bytes were "not JSON" (invalid_response, exit 1).
  const bases = await Promise.all(
    Object.entries(ENCODERS).map(async ([coding, encode]) => {
      const base = await foreignServer(t, (res) => {
        res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': coding });
        res.end(encode(Buffer.from(JSON.stringify(KEYS_PAGE))));
      });
      return [coding, base] as const;
    }),
  );
  const results = await Promise.all(bases.map(([, base]) => runSvc(['keys', 'list', '--url', base, '--json'])));
  results.forEach((result, i) => {
    const coding = bases[i]![0];
    assert.equal(result.code, 0, `${coding}: ${result.stderr}`);
    assert.deepEqual(JSON.parse(result.stdout), KEYS_PAGE, coding);
  });
  // An error answer too: its message is read from the decoded body.
  const refusing = await foreignServer(t, (res) => {
    res.writeHead(403, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
    res.end(gzipSync(JSON.stringify({ error: { code: 'forbidden', message: 'not an admin' } })));
  });
  const refused = await runSvc(['keys', 'list', '--url', refusing]);
  assert.equal(refused.code, 1, refused.stderr);
  assert.match(refused.stderr, /HTTP 403 forbidden: not an admin/);
});

test('an answer in a content coding the client cannot decode is an error naming the coding, not garbage read as text', async (t) => {
  const base = await foreignServer(t, (res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'zstd' });
    res.end(Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0x00]));
  });
  const result = await runSvc(['keys', 'list', '--url', base, '--json']);
  assert.equal(result.code, 1, result.stderr);
  assert.equal(result.stdout, '');
  assert.match(result.stderr, /GET \/api\/v1\/keys.*encoded as "zstd"/);
});
