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
 * and pays nothing for the budget. The budget is the gateway surface's (`request.server.bodyBudget`, decorated there),
 * and the body stream a route reads (src/http/gathered-body.ts) asks it, in its preParsing hook: after the call's
 * identity and its rate limit (a route's onRequest hook, @fastify/rate-limit's), before its body is read. A declared
 * body (`content-length`) is counted whole there; a chunked one, whose size nobody knows beforehand, as its bytes
 * arrive, and refused at the chunk that crosses the budget. A body declared past the body limit is left to the
 * limit's 413.
 */
import type { ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../core/errors.ts';

/** The largest body the budget ignores: a long chat with its context, not an image or a batch. */
export const SMALL_BODY_BYTES = 64 * 1024;

declare module 'fastify' {
  interface FastifyInstance {
    /** The budget of the surface's bodies in progress: the gateway's (src/http/app.ts); other surfaces have none. */
    bodyBudget?: BodyBudget;
  }
}

export interface BodyBudget {
  /** Hold the call's body, declared `bytes` long, until its answer is done; or the refusal to answer it with. */
  holdDeclared(request: FastifyRequest, reply: FastifyReply, bytes: number): AppError | null;
  /** The count of the call's chunked body, whose size nobody knows until it has come. */
  countChunked(request: FastifyRequest, reply: FastifyReply): ChunkedCount;
}

/** Told the size of each piece of a body as it arrives: the refusal at the piece that crosses the budget, else null. */
export type ChunkedCount = (bytes: number) => AppError | null;

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

  return {
    holdDeclared(request, reply, bytes) {
      if (!(bytes > SMALL_BODY_BYTES) || bytes > bodyLimitBytes) return null;
      if (!fits(held, bytes)) return refusal();
      hold(reply.raw, request.raw.socket, bytes);
      return null;
    },
    countChunked(request, reply) {
      const response = reply.raw;
      const socket = request.raw.socket;
      let received = 0;
      let holding: Holding | null = null;
      return (bytes) => {
        received += bytes;
        // Once the call is answered (a 413 while the client goes on sending) or released, its bytes count no more.
        if (received <= SMALL_BODY_BYTES || response.writableEnded || holding?.released) return null;
        const mine = holding?.bytes ?? 0;
        if (!fits(held - mine, received)) return refusal();
        if (holding) {
          held += received - mine;
          holding.bytes = received;
        } else {
          holding = hold(response, socket, received);
        }
        return null;
      };
    },
  };
}
