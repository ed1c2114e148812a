/**
 * `svc serve`'s log on a terminal: its JSON lines carry what any client sends (the Host header, a forwarded entry),
 * before any credential is read. JSON escapes C0 controls itself but leaves C1 controls (U+009B, a CSI on terminals
 * that take them), DEL and the characters that reorder or break lines raw; they are written as `\u` escapes, the same
 * JSON value (docs/configuration.md).
 */
import assert from 'node:assert/strict';
import test, { before } from 'node:test';
import { loadScaled } from '../support/load-scaled.ts';
import { exchange } from '../support/raw-http.ts';
import { ensureBundle, startServe, tempDir } from '../support/process.ts';

before(ensureBundle);

/** What may not reach a terminal raw (JSON text holds no C0 control but its line's end). */
const RAW = /[\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

test("a client's Host header and forwarded entry holding C1 controls reach svc serve's log escaped, the same JSON value", async (t) => {
  const server = await startServe(t, tempDir(t), { SVC_LOG_LEVEL: 'info', SVC_TRUST_PROXY_HEADERS: 'true', SVC_TRUSTED_PROXY_CIDRS: '127.0.0.1' });
  const port = Number(new URL(server.address).port);
  // Header bytes above 0x7f are read as Latin-1: 0x9b is U+009B, CSI; 0x9b 2 J clears the screen, 0x9d (OSC) retitles it.
  const host = Buffer.from('h\x9b2J\x9d0;PWNED\x9cx', 'latin1');
  const forwarded = Buffer.from('not-an-ip\x9b31m', 'latin1');
  const request = Buffer.concat([
    Buffer.from('GET /health?probe=hostile HTTP/1.1\r\nHost: '),
    host,
    Buffer.from('\r\nX-Forwarded-For: '),
    forwarded,
    Buffer.from('\r\nConnection: close\r\n\r\n'),
  ]);
  const answer = await exchange(port, request);
  assert.equal(answer.status, 200, answer.headers);
  const requestId = /x-request-id: (\S+)/i.exec(answer.headers)![1]!;
  const deadline = Date.now() + loadScaled(10_000);
  let line: string | undefined;
  while ((line = server.output().split('\n').find((l) => l.includes(requestId) && l.includes('incoming request'))) === undefined) {
    assert.ok(Date.now() < deadline, `no log line of ${requestId}: ${server.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  assert.doesNotMatch(line, RAW, JSON.stringify(line));
  assert.match(line, /"hostname":"h\\u009b2J\\u009d0;PWNED\\u009cx"/);
  const logged = JSON.parse(line).req;
  assert.equal(logged.hostname, host.toString('latin1'));
  assert.equal(logged.forwardedForNotAnIp, forwarded.toString('latin1'));
  // The rest of the log is untouched.
  assert.match(server.output(), /"msg":"incoming request"/);
});
