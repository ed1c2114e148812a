/**
 * The node HTTP servers the app is served on: fastify's own (TCP) and those svc makes besides it, the local operator
 * socket's and, for `--host localhost`, one for each further address the name resolves to (src/server.ts). Each must
 * handle its connections as svc does, not as node does by default; what they all need is set up here, in one place,
 * so that a server that lacks a protection the others have cannot be made by forgetting it.
 */
import dns from 'node:dns';
import { createServer, type Server } from 'node:http';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.ts';
import { answerClientError, answerNodeRefusals } from './client-errors.ts';
import { inTurn } from './pipelined-turns.ts';
import { keepPeerAddresses } from './peer-address.ts';
import { ignoreUpgrades } from './upgrade.ts';

/**
 * How often node checks its connections against the header and request timeouts. Its default, 30 s, is when a client
 * trickling a request is cut: up to 30 s past `SVC_HEADERS_TIMEOUT_MS` (15 s) or `SVC_REQUEST_TIMEOUT_MS`. A check
 * walks the open connections, ~1 µs each.
 */
export const CONNECTIONS_CHECKING_INTERVAL_MS = 1_000;

/** What every server of the app does with its connections and requests beyond node's defaults. */
export function serveApp(server: Server, app: FastifyInstance): void {
  // node keeps a request's first 1000 header lines and drops the rest without a word (`maxHeadersCount`'s default):
  // a client padding its request with a thousand lines pushed out those a proxy appends after them (X-Forwarded-For,
  // SPEC 5.4) and its own credential. The header section's size (16 KiB, else 431) is the only bound.
  server.maxHeadersCount = 0;
  // Every per-address limit counts a request by its connection's peer, which a client resetting it must not erase.
  keepPeerAddresses(server);
  // Pipelined requests one at a time: one behind an answer that closes its connection never runs (src/http/pipelined-turns.ts).
  server.on('request', inTurn(app.routing));
  answerNodeRefusals(server, app.log);
  ignoreUpgrades(server);
  app.draining.watch(server);
}

/**
 * A server of the app besides fastify's, not yet listening: the timeouts and parser-error answers fastify gives its
 * own (src/http/app.ts), and `serveApp`. Closing it is its maker's: fastify's `close()` closes its own server only.
 */
export function createAppServer(app: FastifyInstance, limits: Config['limits']): Server {
  const server = createServer({ connectionsCheckingInterval: CONNECTIONS_CHECKING_INTERVAL_MS, requireHostHeader: false });
  server.on('clientError', (error, socket) => answerClientError(error, socket, app.log));
  server.headersTimeout = limits.headersTimeoutMs;
  server.requestTimeout = limits.requestTimeoutMs;
  server.keepAliveTimeout = limits.keepAliveTimeoutMs;
  // The idle timeout fastify's `connectionTimeout` sets on its server: a connection where nothing moves is closed.
  server.setTimeout(limits.idleTimeoutMs);
  serveApp(server, app);
  return server;
}

/**
 * The addresses `--host` is bound on, the first by fastify's server, the others by servers of `createAppServer`.
 * `localhost` is every address the system's resolver gives it (127.0.0.1 and ::1 on most machines): fastify's
 * listen() binds that name's further addresses itself, on plain node servers without `serveApp`'s handling, so svc
 * names it no address fastify would resolve again. Any other host is bound as node binds it: an IP address as it is,
 * a name on its first address.
 */
export function addressesToBind(host: string): Promise<string[]> {
  if (host !== 'localhost') return Promise.resolve([host]);
  return new Promise((resolve, reject) => {
    // `dns.lookup`, as node's listen() resolves a name (getaddrinfo: /etc/hosts), in its order: the first is the one
    // node would bind.
    dns.lookup(host, { all: true }, (error, found) => (error ? reject(error) : resolve([...new Set(found.map(({ address }) => address))])));
  });
}
