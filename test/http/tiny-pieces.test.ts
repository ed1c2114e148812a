/**
 * A body that reaches svc in a great many tiny pieces must not cost svc much more memory than the body: node's parser
 * hands each piece on as a Buffer of its own, a few hundred bytes of object however small. A chunked body sent as tiny
 * chunks (`1\r\n \r\n`, six bytes on the wire for one byte of body) took a `svc serve` past a gigabyte for a few
 * megabytes; a body with a Content-Length written a byte per TCP segment held about 75 bytes per byte of body while it
 * arrived. Measured as the process's resident memory (VmHWM, VmRSS), with a bound several times what the bodies need.
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

/** The process's memory figure `field` of /proc/<pid>/status (VmHWM: peak resident, VmRSS: resident now), in MB. */
function memoryMb(pid: number, field: 'VmHWM' | 'VmRSS'): number {
  const line = new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(line![1]) / 1024;
}

const peakRssMb = (pid: number) => memoryMb(pid, 'VmHWM');

/** The status line of the answer `socket` reads, once the server has closed it (each request says `Connection: close`). */
function answerStatusLine(socket: Socket): Promise<string> {
  let text = '';
  socket.setEncoding('latin1');
  socket.on('data', (chunk: string) => (text += chunk));
  return new Promise((resolve, reject) => {
    socket.on('error', reject);
    socket.on('close', () => resolve(text.split('\r\n', 1)[0]!));
  });
}

/** Send `path` a chunked JSON body padded with `CHUNKS` one-byte chunks; resolves with the answer's status line. */
async function sendTinyChunks(socket: Socket, path: string): Promise<string> {
  const statusLine = answerStatusLine(socket);
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
  return statusLine;
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

/**
 * Connections writing a declared body a byte per segment at once: each reads its bytes a few at a time. 24, not more:
 * every byte is a write here and a read in svc (48 took ~48 s of a loaded run), and held as they came the bodies of 24
 * already took svc 106 MB up, well past the bound below.
 */
const SEGMENTED_CONNECTIONS = 24;
/** Past the size from which a declared body is gathered, within the bodies the gateway's budget leaves uncounted. */
const SEGMENTED_BODY_BYTES = 64 * 1024;
/**
 * The most svc may grow while those bodies are all but complete: 1.5 MB of bodies, plus node's young generation filling
 * with the pieces before they are gathered (gathered, svc grew 1-4 MB). Held as they came, they took it 106 MB up.
 */
const SEGMENTED_GROWTH_BOUND_MB = 60;

/** A connection to `port` that has sent `path` a Content-Length JSON body but its last byte, one byte per write. */
async function sendAllButLastByte(port: number, path: string): Promise<{ finish(): Promise<string> }> {
  const socket = connect(port, '127.0.0.1');
  // No Nagle: each one-byte write goes out in a segment of its own.
  socket.setNoDelay(true);
  const statusLine = answerStatusLine(socket);
  await new Promise((resolve) => socket.once('connect', resolve));
  const head = '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]';
  const body = Buffer.from(`${head}${' '.repeat(SEGMENTED_BODY_BYTES - head.length - 1)}}`);
  socket.write(`POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`);
  for (let sent = 0; sent < body.length - 1; sent++) {
    if (!socket.write(body.subarray(sent, sent + 1))) await new Promise((resolve) => socket.once('drain', resolve));
    // Let the other connections write, and svc read, between bytes.
    if (sent % 16 === 15) await new Promise((resolve) => setImmediate(resolve));
  }
  return {
    async finish() {
      socket.write(body.subarray(body.length - 1));
      return statusLine;
    },
  };
}

test('Content-Length bodies written a byte per segment are held in about their own size while they arrive', async (t) => {
  const svc = await startServe(t, tempDir(t));
  const port = Number(new URL(svc.address).port);
  const before = memoryMb(svc.child.pid!, 'VmRSS');
  const pending = await Promise.all(Array.from({ length: SEGMENTED_CONNECTIONS }, () => sendAllButLastByte(port, '/v1/chat/completions')));
  const growth = memoryMb(svc.child.pid!, 'VmRSS') - before;
  // Answered: each body was read whole, and served.
  for (const status of await Promise.all(pending.map((connection) => connection.finish()))) assert.match(status, /^HTTP\/1\.1 200 /);
  assert.ok(growth < SEGMENTED_GROWTH_BOUND_MB, `svc grew by ${Math.round(growth)} MB`);
});
