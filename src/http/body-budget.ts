/**
 * The request bodies of gateway calls in progress, bounded in total (`SVC_GATEWAY_INFLIGHT_BODY_BYTES`).
 *
 * Each body is bounded by the surface's body limit, but not their sum, and a body lives several times over until its
 * answer has ended: read, parsed, serialized again for the upstream, for its cache key and for the ledger. Eighty
 * concurrent 31 MB prompts took svc to 6.2 GB of RSS (docs/performance-notes.md, "Request bodies held in total").
 * A large body is held from the moment its call is admitted until its response has closed or its connection has; a
 * call whose body would take the total past the budget is answered 503 `busy` with `retry-after` (the SDKs retry it)
 * before its body is parsed, unless no other body is held, so that one request of any allowed size always passes.
 *
 * Bodies of at most SMALL_BODY_BYTES are neither counted nor refused: ordinary traffic never waits for large bodies,
 * and pays nothing for the budget. The check is the preParsing hook: after the call's identity and its rate limit
 * (a route's onRequest hook, @fastify/rate-limit's), before its body is read. A declared body (`content-length`) is
 * counted whole there; a chunked one, whose size nobody knows beforehand, as its bytes arrive, and refused at the
 * chunk that crosses the budget. A body declared past the body limit is left to the limit's 413.
 */
import type { ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import { Transform, type TransformCallback } from 'node:stream';
import type { FastifyReply, FastifyRequest, RequestPayload } from 'fastify';
import { AppError } from '../core/errors.ts';
import { pipeBody } from './piped-body.ts';

/** The largest body the budget ignores: a long chat with its context, not an image or a batch. */
export const SMALL_BODY_BYTES = 64 * 1024;

export interface BodyBudget {
  /** preParsing hook: hold the call's body, or refuse the call with 503 `busy`. */
  preParsing(request: FastifyRequest, reply: FastifyReply, payload: RequestPayload, done: (error: Error | null, payload?: RequestPayload) => void): void;
}

/** Bytes held for one call, until its response or its connection closes. */
interface Holding {
  bytes: number;
  released: boolean;
}

export function createBodyBudget(limits: { budgetBytes: number; bodyLimitBytes: number }): BodyBudget {
  const { budgetBytes, bodyLimitBytes } = limits;
  let held = 0;
  /**
   * The releases due when a connection closes: one `close` listener per connection, not one per body (eight large
   * bodies pipelined on one connection passed node's listener warning).
   */
  const heldOn = new WeakMap<Socket, Set<() => void>>();
  const releaseWith = (socket: Socket, release: () => void) => {
    const releases = heldOn.get(socket);
    if (releases) return void releases.add(release);
    const first = new Set([release]);
    heldOn.set(socket, first);
    socket.once('close', () => {
      heldOn.delete(socket);
      for (const due of first) due();
    });
  };

  // A 5xx answers its catalogue message (src/http/error-shapes.ts), which names the variable.
  const refusal = () => new AppError('busy', { headers: { 'retry-after': '1' } });
  /** Whether `bytes` more may be held beside the `others` held by other calls. */
  const fits = (others: number, bytes: number) => others === 0 || others + bytes <= budgetBytes;

  /**
   * Hold `bytes` for the call answered by `response` on `connection`. Released when the response closes or, if it never
   * does, when the connection closes: node 20 emits no `close` on a response queued behind another on a pipelined
   * connection that closes (its socketOnClose aborts the queued requests only).
   */
  const hold = (response: ServerResponse, connection: unknown, bytes: number): Holding => {
    // An injected request's socket is light-my-request's stand-in, which never closes.
    const socket = connection instanceof Socket ? connection : null;
    held += bytes;
    const holding: Holding = { bytes, released: false };
    const release = () => {
      if (holding.released) return;
      holding.released = true;
      held -= holding.bytes;
      response.removeListener('close', release);
      if (socket) heldOn.get(socket)?.delete(release);
    };
    response.once('close', release);
    if (socket) releaseWith(socket, release);
    return holding;
  };

  /** A chunked body counted as it arrives (module comment); it passes through unchanged. */
  const counted = (response: ServerResponse, socket: unknown, payload: RequestPayload): Transform => {
    let received = 0;
    let holding: Holding | null = null;
    const counter = new Transform({
      transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback) {
        received += chunk.length;
        // Once the call is answered (a 413 while the client goes on sending) or released, its bytes count no more.
        if (received > SMALL_BODY_BYTES && !response.writableEnded && !holding?.released) {
          const mine = holding?.bytes ?? 0;
          if (!fits(held - mine, received)) return callback(refusal());
          if (holding) {
            held += received - mine;
            holding.bytes = received;
          } else {
            holding = hold(response, socket, received);
          }
        }
        callback(null, chunk);
      },
    });
    // fastify listens while it reads the body; a refusal after it stopped (it answered already) is nobody's error.
    counter.on('error', () => undefined);
    return pipeBody(response, payload, counter);
  };

  return {
    preParsing(request, reply, payload, done) {
      const declared = request.headers['content-length'];
      if (declared === undefined) {
        // No length: a chunked body, or none at all (a GET).
        if (request.headers['transfer-encoding'] === undefined) return done(null, payload);
        return done(null, counted(reply.raw, request.raw.socket, payload));
      }
      const bytes = Number(declared);
      if (!(bytes > SMALL_BODY_BYTES) || bytes > bodyLimitBytes) return done(null, payload);
      if (!fits(held, bytes)) return done(refusal());
      hold(reply.raw, request.raw.socket, bytes);
      done(null, payload);
    },
  };
}
