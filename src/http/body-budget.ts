/**
 * The request bodies of gateway calls in progress, bounded in total (`SVC_GATEWAY_INFLIGHT_BODY_BYTES`).
 *
 * Each body is bounded by the surface's body limit, but not their sum, and a body lives several times over until its
 * answer has ended: read, parsed, serialized again for the upstream, for its cache key and for the ledger. Eighty
 * concurrent 31 MB prompts took svc to 6.2 GB of RSS (docs/performance-notes.md, "Request bodies held in total").
 * A call is held from its first byte until its response has closed; one whose body would take the total past the
 * budget is answered 503 with `retry-after` (the SDKs retry it) before its body is read, unless no other body is held,
 * so that one request of any allowed size always passes.
 *
 * A declared body (`content-length`) is counted as the request arrives, after its identity and rate limit; a chunked
 * one, whose size nobody knows beforehand, as its bytes arrive (`counted`), and refused at the chunk that crosses the
 * budget.
 */
import type { ServerResponse } from 'node:http';
import { Transform, type TransformCallback } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../core/errors.ts';

export interface BodyBudget {
  /** Bytes of the bodies held now. */
  readonly heldBytes: number;
  /** onRequest: hold a declared body, or the error refusing the call. */
  admit(request: FastifyRequest, reply: FastifyReply): AppError | undefined;
  /** preParsing: a chunked body, counted as it arrives (a declared one as it is). */
  counted<Payload extends NodeJS.ReadableStream>(request: FastifyRequest, reply: FastifyReply, payload: Payload): Payload | Transform;
}

export function createBodyBudget(limitBytes: number): BodyBudget {
  let held = 0;

  // A 5xx answers its catalogue message (src/http/error-shapes.ts), which names the variable.
  const refusal = () => new AppError('busy', { headers: { 'retry-after': '1' } });

  /** Count `bytes` more for the response `raw`; the first count registers their release when it closes. */
  const hold = (raw: ServerResponse, bytes: number, holding: { bytes: number } | null): { bytes: number } => {
    held += bytes;
    if (holding) {
      holding.bytes += bytes;
      return holding;
    }
    const own = { bytes };
    raw.once('close', () => {
      held -= own.bytes;
    });
    return own;
  };

  return {
    get heldBytes() {
      return held;
    },

    admit(request, reply) {
      const declared = request.headers['content-length'];
      if (declared === undefined) return undefined;
      const bytes = Number(declared);
      if (!(bytes > 0)) return undefined;
      if (held > 0 && held + bytes > limitBytes) return refusal();
      hold(reply.raw, bytes, null);
      return undefined;
    },

    counted(request, reply, payload) {
      if (request.headers['content-length'] !== undefined) return payload;
      let holding: { bytes: number } | null = null;
      return (payload as unknown as NodeJS.ReadableStream).pipe(
        new Transform({
          transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback) {
            const others = held - (holding?.bytes ?? 0);
            if (others > 0 && held + chunk.length > limitBytes) return callback(refusal());
            holding = hold(reply.raw, chunk.length, holding);
            callback(null, chunk);
          },
        }),
      );
    },
  };
}
