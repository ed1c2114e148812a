/**
 * The body stream a route reads: a request body that may arrive in tiny pieces, gathered into pieces of `PIECE_BYTES`
 * before fastify reads it, and counted against its surface's body budget where it has one (the gateway's,
 * src/http/body-budget.ts).
 *
 * node's parser hands each piece of a body on as a Buffer of its own, and fastify keeps every one until the body ends:
 * an object and an allocation per piece, however small. A chunked body's pieces are its chunks, which the client
 * chooses: sent as tiny chunks (`1\r\n \r\n`: six bytes on the wire for one byte of body), a 3 MB body took a server to
 * 1.2 GB. A body with a `Content-Length` arrives in the pieces the socket reads, and a client writing it a byte per TCP
 * segment gets a piece per byte or so as well: about 75 bytes held per byte of body (a 64 KiB body pinned 5 MB, a 3 MB
 * one took a server from 94 to 199 MB before the request timeout cut it). Gathered, a body costs about its own size.
 *
 * Chunked bodies are gathered whatever their size. A declared body only past `GATHERED_FROM_BYTES`: a chat body of a
 * few KB pays one header check, no stream; one just under the threshold pins about 1.2 MB sent a byte per segment.
 * A large piece that is most of its read passes as is (`passesAsIs`), so a body sent whole costs the stream's machinery
 * and no copy: a 1 MB body in 64 KiB reads about the CPU of the same body read directly, measured alone (copying it
 * all cost 0.3-0.4 ms more).
 *
 * Gathering and the budget are one preParsing hook, on every surface, so that a request's framing headers are read
 * once and a body goes through one stream at most: the stream that gathers a chunked body counts it too.
 */
import type { ServerResponse } from 'node:http';
import { Transform, type TransformCallback } from 'node:stream';
import type { FastifyReply, FastifyRequest, RequestPayload } from 'fastify';
import type { ChunkedCount } from './body-budget.ts';
import { pipeBody } from './piped-body.ts';

/** The size of the pieces a body is gathered into. */
export const PIECE_BYTES = 64 * 1024;

/** The smallest piece that goes on as it is, its object and allocation a few percent of its bytes. */
const PASSED_FROM_BYTES = 4 * 1024;

/** The smallest declared body that is gathered (module comment: what one just under it can pin). */
export const GATHERED_FROM_BYTES = 16 * 1024;

/**
 * preParsing hook: a chunked or large declared body's payload replaced by its gathered pieces, any other untouched; a
 * body the surface's budget counts held against it, or the call refused with 503 `busy`.
 */
export function gatherBody(request: FastifyRequest, reply: FastifyReply, payload: RequestPayload, done: (error: Error | null, payload?: RequestPayload) => void): void {
  const { headers } = request;
  const declared = headers['content-length'];
  // No length: a chunked body, or none at all (a GET).
  const chunked = declared === undefined && headers['transfer-encoding'] !== undefined;
  const bytes = Number(declared);
  // Number(undefined) is NaN, never past the threshold: a bodiless GET passes here too. So does every body the budget
  // ignores (SMALL_BODY_BYTES is past the threshold): ordinary traffic pays this one check.
  if (!chunked && !(bytes >= GATHERED_FROM_BYTES)) return done(null, payload);
  // The route's instance: the gateway's carries its budget. A request made up without one (a unit test's) has none.
  const budget = request.server?.bodyBudget;
  if (chunked) return done(null, gathered(reply.raw, payload, budget?.countChunked(request, reply)));
  const refusal = budget?.holdDeclared(request, reply, bytes);
  if (refusal) return done(refusal);
  done(null, gathered(reply.raw, payload));
}

function gathered(response: ServerResponse, payload: RequestPayload, count?: ChunkedCount): Transform {
  let piece: Buffer | null = null;
  let filled = 0;
  const pieces = new Transform({
    transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback) {
      // Counted as it arrives, before it waits in a piece: the budget refuses at the chunk that crosses it.
      const refusal = count?.(chunk.length);
      if (refusal) return callback(refusal);
      if (passesAsIs(chunk)) {
        // What was gathered before it goes first, as a copy of its own size: the piece is filled on after it.
        if (filled > 0) this.push(Buffer.from(piece!.subarray(0, filled)));
        filled = 0;
        this.push(chunk);
        return callback();
      }
      let offset = 0;
      while (offset < chunk.length) {
        piece ??= Buffer.allocUnsafe(PIECE_BYTES);
        const copied = chunk.copy(piece, filled, offset);
        filled += copied;
        offset += copied;
        if (filled === PIECE_BYTES) {
          this.push(piece);
          piece = null;
          filled = 0;
        }
      }
      callback();
    },
    flush(callback: TransformCallback) {
      if (filled > 0) this.push(piece!.subarray(0, filled));
      callback();
    },
  });
  // fastify listens while it reads the body; a refusal after it stopped (it answered already) is nobody's error.
  if (count) pieces.on('error', () => undefined);
  return pipeBody(response, payload, pieces);
}

/**
 * A piece held as it is costs little more than its bytes when it is large and the bytes it views, what the socket read,
 * are mostly its own (a read of a chunked body may hold other chunks and their framing). Such is every read of a body
 * sent whole: it goes on uncopied, and only the pieces a trickle brings are gathered.
 */
function passesAsIs(chunk: Buffer): boolean {
  return chunk.length >= PASSED_FROM_BYTES && chunk.length * 2 >= chunk.buffer.byteLength;
}
