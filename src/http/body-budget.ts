/**
 * The request bodies of gateway calls in progress, bounded in total (`SVC_GATEWAY_INFLIGHT_BODY_BYTES`).
 *
 * Each body is bounded by the surface's body limit, but not their sum, and a body lives several times over until its
 * answer has ended: read, parsed, serialized again for the upstream, for its cache key and for the ledger. Eighty
 * concurrent 31 MB prompts took svc to 6.2 GB of RSS (docs/performance-notes.md, "Request bodies held in total").
 * A large body is held from the moment its call is admitted until its response has closed; a call whose body would
 * take the total past the budget is answered 503 `busy` with `retry-after` (the SDKs retry it) before its body is
 * read, unless no other body is held, so that one request of any allowed size always passes.
 *
 * Bodies of at most SMALL_BODY_BYTES are neither counted nor refused: ordinary traffic never waits for large bodies,
 * and pays nothing for the budget. A declared body (`content-length`) is counted as its call arrives, after its
 * identity and rate limit; a chunked one, whose size nobody knows beforehand, as its bytes arrive (`counted`), and
 * refused at the chunk that crosses the budget. A body declared past the body limit is left to the limit's 413.
 */
import type { ServerResponse } from 'node:http';
import { Transform, type TransformCallback } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../core/errors.ts';

/** The largest body the budget ignores: a long chat with its context, not an image or a batch. */
export const SMALL_BODY_BYTES = 64 * 1024;

export interface BodyBudget {
  /** onRequest: hold a declared body, or the error refusing the call. */
  admit(request: FastifyRequest, reply: FastifyReply): AppError | undefined;
  /** preParsing: a chunked body, counted as it arrives (a declared one as it is). */
  counted<Payload extends NodeJS.ReadableStream>(request: FastifyRequest, reply: FastifyReply, payload: Payload): Payload | Transform;
}

export function createBodyBudget(limits: { budgetBytes: number; bodyLimitBytes: number }): BodyBudget {
  const { budgetBytes, bodyLimitBytes } = limits;
  let held = 0;

  // A 5xx answers its catalogue message (src/http/error-shapes.ts), which names the variable.
  const refusal = () => new AppError('busy', { headers: { 'retry-after': '1' } });
  /** Whether `bytes` more may be held beside the `others` held by other calls. */
  const fits = (others: number, bytes: number) => others === 0 || others + bytes <= budgetBytes;

  /** Hold `bytes` until the response `raw` closes; the returned holding takes more of them (a chunked body). */
  const hold = (raw: ServerResponse, bytes: number): { bytes: number } => {
    held += bytes;
    const holding = { bytes };
    raw.once('close', () => {
      held -= holding.bytes;
    });
    return holding;
  };

  return {
    admit(request, reply) {
      const declared = request.headers['content-length'];
      if (declared === undefined) return undefined;
      const bytes = Number(declared);
      if (!(bytes > SMALL_BODY_BYTES) || bytes > bodyLimitBytes) return undefined;
      if (!fits(held, bytes)) return refusal();
      hold(reply.raw, bytes);
      return undefined;
    },

    counted(request, reply, payload) {
      if (request.headers['content-length'] !== undefined) return payload;
      let received = 0;
      let holding: { bytes: number } | null = null;
      return (payload as unknown as NodeJS.ReadableStream).pipe(
        new Transform({
          transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback) {
            received += chunk.length;
            if (received > SMALL_BODY_BYTES) {
              const mine = holding?.bytes ?? 0;
              if (!fits(held - mine, received)) return callback(refusal());
              if (holding) {
                held += received - mine;
                holding.bytes = received;
              } else {
                holding = hold(reply.raw, received);
              }
            }
            callback(null, chunk);
          },
        }),
      );
    },
  };
}
