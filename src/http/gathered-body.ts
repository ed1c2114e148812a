/**
 * A request body that may arrive in tiny pieces, gathered into pieces of `PIECE_BYTES` before fastify reads it.
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
 * The stream costs a gathered body a copy and its own machinery: about 0.3 ms of CPU for 1 MB sent whole, 20-30 us
 * for 20 KB, measured alone. A large piece with nothing gathered before it passes as is.
 */
import type { ServerResponse } from 'node:http';
import { Transform, type TransformCallback } from 'node:stream';
import type { FastifyReply, FastifyRequest, RequestPayload } from 'fastify';
import { pipeBody } from './piped-body.ts';

/** The size of the pieces a body is gathered into. */
export const PIECE_BYTES = 64 * 1024;

/** The smallest declared body that is gathered (module comment: what one just under it can pin). */
export const GATHERED_FROM_BYTES = 16 * 1024;

/** preParsing hook: a chunked or large declared body's payload replaced by its gathered pieces; any other untouched. */
export function gatherBody(request: FastifyRequest, reply: FastifyReply, payload: RequestPayload, done: (error: Error | null, payload?: RequestPayload) => void): void {
  const { headers } = request;
  // Number(undefined) is NaN, never past the threshold: a bodiless GET passes here too.
  if (headers['transfer-encoding'] === undefined && !(Number(headers['content-length']) >= GATHERED_FROM_BYTES)) return done(null, payload);
  done(null, gathered(reply.raw, payload));
}

function gathered(response: ServerResponse, payload: RequestPayload): Transform {
  let piece: Buffer | null = null;
  let filled = 0;
  const pieces = new Transform({
    transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback) {
      let offset = 0;
      while (offset < chunk.length) {
        // A large piece with nothing gathered before it goes on as it is: no copy.
        if (filled === 0 && chunk.length - offset >= PIECE_BYTES) {
          this.push(offset === 0 ? chunk : chunk.subarray(offset));
          break;
        }
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
      if (piece !== null) this.push(piece.subarray(0, filled));
      callback();
    },
  });
  return pipeBody(response, payload, pieces);
}
