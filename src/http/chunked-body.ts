/**
 * A chunked request body gathered into pieces of `PIECE_BYTES` before fastify reads it.
 *
 * node's parser hands each chunk of a chunked body on as a Buffer of its own, a view of the bytes read from the socket,
 * and fastify keeps every one until the body ends. A client sending a body as tiny chunks (`1\r\n \r\n`: six bytes on
 * the wire for one byte of body) made svc hold a few hundred bytes of object, plus the wire bytes the view pins, per
 * byte of body: a 3 MB body took a server to 1.2 GB, and a body under the gateway's 32 MiB limit could take it past
 * any machine's memory. Gathered, a body costs about its own size, whatever its chunks.
 *
 * Only for chunked bodies: a body with a `Content-Length` arrives in the pieces TCP delivers, which the network bounds.
 * A body sent whole in one large chunk passes as is.
 */
import type { ServerResponse } from 'node:http';
import { Transform, type TransformCallback } from 'node:stream';
import type { FastifyReply, FastifyRequest, RequestPayload } from 'fastify';
import { pipeBody } from './piped-body.ts';

/** The size of the pieces a chunked body is gathered into. */
export const PIECE_BYTES = 64 * 1024;

/** preParsing hook: a chunked body's payload replaced by its gathered pieces; any other passes untouched. */
export function gatherChunkedBody(request: FastifyRequest, reply: FastifyReply, payload: RequestPayload, done: (error: Error | null, payload?: RequestPayload) => void): void {
  if (request.headers['transfer-encoding'] === undefined) return done(null, payload);
  done(null, gathered(reply.raw, payload));
}

function gathered(response: ServerResponse, payload: RequestPayload): Transform {
  let piece: Buffer | null = null;
  let filled = 0;
  const pieces = new Transform({
    transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback) {
      let offset = 0;
      while (offset < chunk.length) {
        // A large chunk with nothing gathered before it goes on as it is: no copy.
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
