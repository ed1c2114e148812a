/**
 * The gatherer of request bodies (src/http/gathered-body.ts) on its own: what it hands fastify is the body, byte for
 * byte and in order, whatever mix of pieces the socket brought; a large piece that is most of what its read holds goes
 * on as it is (no copy), tiny ones are gathered, and a piece that views a read mostly of other bytes is copied.
 */
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { PassThrough, type Readable } from 'node:stream';
import test from 'node:test';
import type { FastifyReply, FastifyRequest, RequestPayload } from 'fastify';
import { GATHERED_FROM_BYTES, gatherBody } from '../../src/http/gathered-body.ts';

/** The pieces gatherBody hands on for `pieces` written to a request declaring `headers`. */
async function handedOn(headers: Record<string, string>, pieces: Buffer[]): Promise<Buffer[]> {
  const payload = new PassThrough();
  const reply = { raw: { once() {} } as unknown as ServerResponse } as FastifyReply;
  let through: RequestPayload | undefined;
  gatherBody({ headers } as unknown as FastifyRequest, reply, payload, (error, gathered) => {
    assert.equal(error, null);
    through = gathered;
  });
  const out: Buffer[] = [];
  (through as Readable).on('data', (piece: Buffer) => out.push(piece));
  const ended = new Promise((resolve) => (through as Readable).on('end', resolve));
  for (const piece of pieces) payload.write(piece);
  payload.end();
  await ended;
  return out;
}

/** A piece of `size` bytes of `fill` with a read of its own size behind it, as a socket read of that size gives. */
const ownRead = (size: number, fill: number) => Buffer.alloc(size, fill);

test('a body of tiny pieces and large reads is handed on whole and in order, the large reads uncopied', async () => {
  const large = ownRead(20_000, 0x61);
  // A read of 64 KiB of which this body piece is a small part (a chunk among a chunked body's framing and others).
  const viewOfOthers = Buffer.alloc(64 * 1024, 0x63).subarray(100, 100 + 5_000);
  const tiny = (byte: number) => Buffer.from([byte]);
  const pieces = [tiny(0x31), tiny(0x32), large, tiny(0x33), viewOfOthers, tiny(0x34), ownRead(70_000, 0x62), tiny(0x35)];
  const out = await handedOn({ 'content-length': String(pieces.reduce((n, p) => n + p.length, 0)) }, pieces);
  assert.deepEqual(Buffer.concat(out), Buffer.concat(pieces));
  assert.ok(out.includes(large), 'a large read goes on as it is');
  assert.ok(!out.some((piece) => piece.buffer === viewOfOthers.buffer), 'a piece viewing a read mostly of other bytes is copied');
  assert.ok(out.length <= 6, `${out.length} pieces: the tiny ones are gathered, not handed on one by one`);
});

test('a chunked body is gathered whatever its size, and a small declared one is handed on untouched', async () => {
  const chunked = await handedOn({ 'transfer-encoding': 'chunked' }, [Buffer.from('{"a":'), Buffer.from('1}')]);
  assert.deepEqual(chunked, [Buffer.from('{"a":1}')]);
  const payload = new PassThrough();
  let through: RequestPayload | undefined;
  gatherBody({ headers: { 'content-length': String(GATHERED_FROM_BYTES - 1) } } as unknown as FastifyRequest, {} as FastifyReply, payload, (_error, gathered) => (through = gathered));
  assert.equal(through, payload);
});
