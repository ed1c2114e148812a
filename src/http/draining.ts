/**
 * Draining the connections of a graceful shutdown (docs/gateway.md, "Graceful shutdown").
 *
 * node's `server.close()` stops accepting and closes the connections idle at that moment; a keep-alive connection
 * whose request is still in flight stays open after its answer until the client or the keep-alive timeout closes it,
 * and `close()` waits for it (fastify's `forceCloseConnections: 'idle'` does no more). So once draining starts:
 * - the last answer due on a connection, when its headers have not gone out yet, carries `Connection: close`, and
 *   node ends the connection after it;
 * - a connection whose answer had already started (a stream) is ended once that answer is complete and no other
 *   answer is due on it (HTTP pipelining);
 * - a request arriving on a connection still open is answered 503 `shutting_down` in its surface's shape, with the
 *   usual headers, and its connection closes after that answer;
 * - requests received before draining began that wait their turn behind an answer (src/http/pipelined-turns.ts) run:
 *   the answer before them keeps the connection, and the last of them closes it.
 *
 * The servers close only once no answer is half-way out (`flushed`): node's `server.close()` counts a connection whose
 * answer has been ended (`res.end()` called) as idle even while its bytes are still being written to a slow client,
 * and destroys it, cutting the answer short.
 *
 * node's `server.close()` also stops checking the header timeout (it clears the interval that runs the check), so a
 * client that had sent part of a request's headers would hold the shutdown until `SVC_SHUTDOWN_TIMEOUT_MS`: once the
 * header timeout has passed after draining began, a connection of a watched server with no answer due is cut. The same
 * holds for the request timeout: a request whose body was still arriving would hold the shutdown as well, so once the
 * request timeout has passed after draining began, each request still not received whole gets what node's own check
 * would have given it (its server's `clientError`, the 408 `request_timeout` of src/http/client-errors.ts).
 *
 * Every request of every server (TCP, the local socket: src/http/app-servers.ts) passes the app's hooks, so one
 * `Draining` covers them all.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import { DictionaryMap } from '../core/dictionary-map.ts';
import { AppError } from '../core/errors.ts';
import { replyError } from './error-shapes.ts';
import { requestsWaitOn, waitedSince } from './pipelined-turns.ts';

export interface Draining {
  /** Whether draining has started (it never stops: the app is closing). */
  readonly active: boolean;
  /** Start draining; idempotent. Called before the servers stop accepting, so no answer escapes it. */
  begin(): void;
  /** Resolves once no answer is ended but still being written (checked again after each wait: more may end). */
  flushed(): Promise<void>;
  /** Follow a response until it is complete (every request, from its first hook). */
  track(response: ServerResponse, socket: Socket | null): void;
  /** onRequest hook: while draining, answer 503 `shutting_down` instead of running the route. */
  refuse(request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void;
  /** Follow a server's connections, so that those still without a whole request can be cut while draining. */
  watch(server: Server): void;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The app's connection draining (src/http/draining.ts); `svc serve` starts it before closing its servers. */
    draining: Draining;
  }
}

/**
 * Resolves when a response is complete or its client gone: its `close`, or its connection's. node 20 emits no `close`
 * on a response queued behind another on a pipelined connection that closes (its socketOnClose aborts the queued
 * requests only), so such a response would be waited for until the shutdown's timeout.
 */
function settledOnce(response: Tracked): Promise<void> {
  return new Promise((resolve) => {
    const done = () => resolve();
    response.once('close', done);
    response[CONNECTION]?.once('close', done);
  });
}

/** End a connection gracefully: its last answer's bytes, then a FIN; closed without waiting for the client's FIN. */
function endConnection(socket: Socket): void {
  if (socket.destroyed || socket.writableEnded) return;
  socket.end(() => socket.destroy());
}

/** What a tracked response carries: its key among those in flight, and its connection (null for an injected one). */
const KEY = Symbol('draining key');
const CONNECTION = Symbol('draining connection');
type Tracked = ServerResponse<IncomingMessage> & { [KEY]?: string; [CONNECTION]?: Socket | null };

/** Whether requests received on a response's connection wait their turn behind it. */
function waitedOn(response: Tracked): boolean {
  const socket = response[CONNECTION];
  return socket !== null && socket !== undefined && requestsWaitOn(socket);
}

/** The error node's request-timeout check hands its server's `clientError` (node does not export its class). */
function requestTimeoutError(): Error & { code: string } {
  return Object.assign(new Error('Request timeout'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' });
}

export function createDraining(options: { headersTimeoutMs: number; requestTimeoutMs: number }): Draining {
  let active = false;
  /** When draining began (`performance.now()`). */
  let beganAt = Infinity;
  /** The open connections of the watched servers, each with its server (an entry per connection, not per request). */
  const connections = new Map<Socket, Server>();
  /**
   * Responses not yet complete, in arrival order (keys are a serial). A DictionaryMap, not a Map keyed by the
   * response: an entry comes and goes with every request (src/core/dictionary-map.ts says why that matters).
   */
  const inFlight = new DictionaryMap<Tracked>();
  let serial = 0;

  const answerDueOn = (socket: Socket): boolean => {
    for (const [, other] of inFlight) if (other[CONNECTION] === socket) return true;
    return false;
  };

  // One listener function for every response (no closure per request). `close` follows `finish` by a tick, after
  // node has ended a `Connection: close` connection or handed it the next pipelined answer; or the client is gone.
  function settled(this: Tracked): void {
    inFlight.delete(this[KEY]!);
    const socket = this[CONNECTION];
    if (active && socket && !answerDueOn(socket)) endConnection(socket);
  }

  /** Cut the connections with no answer due: their request's headers did not come whole within the header timeout. */
  function cutHalfSent(): void {
    const answering = new Set<Socket>();
    for (const [, response] of inFlight) if (response[CONNECTION]) answering.add(response[CONNECTION]);
    for (const socket of connections.keys()) if (!answering.has(socket)) socket.destroy();
  }

  /** Time out the requests whose body has not come whole within the request timeout, as node's own check does. */
  function cutUnreceived(): void {
    for (const [, response] of inFlight) {
      const socket = response[CONNECTION];
      const server = socket ? connections.get(socket) : undefined;
      if (server && !socket!.destroyed && !response.headersSent && response.req.complete === false) {
        server.emit('clientError', requestTimeoutError(), socket);
      }
    }
  }

  async function flushed(): Promise<void> {
    for (;;) {
      const writing = [...inFlight].map(([, response]) => response).filter((response) => response.writableEnded && !response.writableFinished);
      if (writing.length === 0) return;
      await Promise.all(writing.map(settledOnce));
    }
  }

  return {
    get active() {
      return active;
    },
    begin() {
      if (active) return;
      active = true;
      beganAt = performance.now();
      // Only the last answer due on each connection (pipelined requests are tracked in order) says so, and none while
      // requests received on it wait their turn (src/http/pipelined-turns.ts): they would never run.
      const lastOn = new Map<Socket | ServerResponse, Tracked>();
      for (const [, response] of inFlight) lastOn.set(response[CONNECTION] ?? response, response);
      for (const response of lastOn.values()) if (!response.headersSent && !waitedOn(response)) response.setHeader('connection', 'close');
      if (connections.size > 0) {
        setTimeout(cutHalfSent, options.headersTimeoutMs).unref();
        setTimeout(cutUnreceived, options.requestTimeoutMs).unref();
      }
    },
    flushed,
    track(response, socket) {
      const tracked = response as Tracked;
      tracked[KEY] = String(++serial);
      // Only real connections are ended; an injected request's socket is light-my-request's stand-in.
      tracked[CONNECTION] = socket instanceof Socket ? socket : null;
      inFlight.set(tracked[KEY], tracked);
      response.on('close', settled);
      if (!active) return;
      // fastify, once closing, asks every answer to close its connection, in its routing before any hook: one that
      // requests received before draining began wait behind keeps it (node then keeps it as the request asked), or
      // they would never run.
      if (waitedOn(tracked)) response.removeHeader('connection');
      else response.setHeader('connection', 'close');
    },
    watch(server) {
      server.on('connection', (socket: Socket) => {
        connections.set(socket, server);
        socket.once('close', () => {
          connections.delete(socket);
          // Answers queued behind another on a pipelined connection get no `close` of their own when it closes
          // (settledOnce): once per connection, not per request, so nothing is added to the request path.
          for (const [key, response] of inFlight) if (response[CONNECTION] === socket) inFlight.delete(key);
        });
      });
    },
    refuse(request, reply, done) {
      // A request received before draining began, which waited its turn behind another answer, is answered as well.
      if (!active || (waitedSince(request.raw) ?? Infinity) < beganAt) return done();
      const error = new AppError('shutting_down');
      void replyError(request, reply, error);
    },
  };
}
