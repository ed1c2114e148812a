/**
 * svc serves no protocol upgrade (no WebSocket, no h2c), and RFC 9110 section 7.8 lets a server ignore `Upgrade`. node
 * does not: a request with `Upgrade` and `Connection: upgrade` ends its parser, and with no 'upgrade' listener the
 * rest of the connection was read by nobody. A request whose body came in the packet of its headers lost the body
 * (answered 408 once the request timeout ran out, or never) and a request pipelined behind it was never answered;
 * `curl --http2` and Java's HttpClient send such requests to every http:// URL.
 *
 * So the server listens for 'upgrade' and hands the connection back to node's HTTP/1.1 parser: the request's head
 * without its `Upgrade` header, then the bytes node had read past it (`head`: its body, pipelined requests), then
 * whatever else arrives. Only such requests pay for it; others never reach this code.
 */
import * as http from 'node:http';
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';

/** node's listener for a new connection on an HTTP server (exported by node:http, untyped): attaches a fresh parser. */
const attachHttpParser = (http as unknown as { _connectionListener: (this: Server, socket: Duplex) => void })._connectionListener;

/** The request line and header section of `request` as sent, less its `Upgrade` header (what made node upgrade). */
function headWithoutUpgrade(request: IncomingMessage): string {
  let head = `${request.method} ${request.url} HTTP/${request.httpVersion}\r\n`;
  const raw = request.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i]!.toLowerCase() !== 'upgrade') head += `${raw[i]}: ${raw[i + 1]}\r\n`;
  }
  return `${head}\r\n`;
}

/** Serve requests asking for a protocol upgrade as plain HTTP/1.1 on `server` (module header). */
export function ignoreUpgrades(server: Server): void {
  server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    if (socket.destroyed) return;
    // Before the parser is attached: these bytes are read first, then the socket's own (node no longer reads it
    // natively once its first parser has, so no later byte can overtake them).
    socket.unshift(Buffer.concat([Buffer.from(headWithoutUpgrade(request), 'latin1'), head]));
    attachHttpParser.call(server, socket);
  });
}
