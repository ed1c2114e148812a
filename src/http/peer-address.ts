/**
 * A connection's peer address, read when the connection is accepted. node reads it (getpeername) the first time
 * `socket.remoteAddress` is asked and keeps it from then on; asked only after the client has reset the connection, it
 * is undefined. svc asks per request (the client address of every per-address limit, src/http/surface.ts), which may
 * be after the connection is gone: a client that wrote a request and reset its connection at once had its request run
 * (a guess at the bootstrap token, a reset e-mail, a signup) with no address, the way a request on the local socket
 * looks, so it was counted as the local operator's (and locked the operator out), never as its own address's.
 */
import type { Server } from 'node:http';
import type { Socket } from 'node:net';

/** Have node learn each connection's peer address as it is accepted, before any of its requests is read. */
export function keepPeerAddresses(server: Server): void {
  server.on('connection', (socket: Socket) => {
    // The read is the point: node keeps the answer for every later one (the local socket's has none to keep).
    void socket.remoteAddress;
  });
}
