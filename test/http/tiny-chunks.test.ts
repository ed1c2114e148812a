/**
 * A chunked body sent as a great many tiny chunks (`1\r\n \r\n`, six bytes on the wire for one byte of body) must not
 * cost svc more memory than the body: node's parser hands each chunk on as a Buffer of its own, and a body of a few
 * megabytes held as millions of them took a `svc serve` past a gigabyte. Over TCP and the local socket, on the gateway
 * and the management API; measured as the process's peak resident memory (VmHWM), with a bound several times what the
 * body itself needs.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import test, { before } from 'node:test';
import { ensureBundle, startServe, tempDir } from '../support/process.ts';

before(ensureBundle);

/** One-byte chunks of whitespace, JSON's own, so the body stays valid. */
const CHUNKS = 1_500_000;
/** The most a server may peak at: ~100 MB idle, plus a generous margin; held as separate Buffers it was ~700 MB. */
const PEAK_BOUND_MB = 350;

function peakRssMb(pid: number): number {
  const line = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(line![1]) / 1024;
}

/** Send `path` a chunked JSON body padded with `CHUNKS` one-byte chunks; resolves with the answer's status line. */
async function sendTinyChunks(socket: Socket, path: string): Promise<string> {
  let text = '';
  socket.setEncoding('latin1');
  socket.on('data', (chunk: string) => (text += chunk));
  const closed = new Promise<void>((resolve, reject) => {
    socket.on('error', reject);
    socket.on('close', () => resolve());
  });
  const chunked = (data: string) => `${Buffer.byteLength(data).toString(16)}\r\n${data}\r\n`;
  socket.write(
    `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n` +
      chunked('{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]'),
  );
  const batch = Buffer.from('1\r\n \r\n'.repeat(10_000));
  for (let sent = 0; sent < CHUNKS; sent += 10_000) {
    if (!socket.write(batch)) await new Promise((resolve) => socket.once('drain', resolve));
  }
  socket.write(`${chunked('}')}0\r\n\r\n`);
  await closed;
  return text.split('\r\n', 1)[0]!;
}

test('a chunked body of a million tiny chunks is held in about its own size, on TCP and the local socket', async (t) => {
  const dataDir = tempDir(t);
  const svc = await startServe(t, dataDir, { SVC_GATEWAY_BODY_LIMIT_BYTES: String(8 * 1024 * 1024), SVC_API_BODY_LIMIT_BYTES: String(8 * 1024 * 1024) });
  const { port } = new URL(svc.address);
  // One at a time: each alone must stay under the bound.
  const gateway = await sendTinyChunks(connect(Number(port), '127.0.0.1'), '/v1/chat/completions');
  const api = await sendTinyChunks(connect(join(dataDir, 'svc.sock')), '/api/v1/keys');
  // Answered: the whole body was read (whatever the route made of it).
  assert.match(gateway, /^HTTP\/1\.1 \d{3} /);
  assert.match(api, /^HTTP\/1\.1 \d{3} /);
  const peak = peakRssMb(svc.child.pid!);
  assert.ok(peak < PEAK_BOUND_MB, `svc peaked at ${Math.round(peak)} MB`);
});
