/**
 * Connections accepted on the data directory's local socket are the operator at the machine (DESIGN.md
 * section 4). The socket server marks each connection with a symbol that no TCP client can set.
 */
import type { Socket } from 'node:net';

const LOCAL_SOCKET = Symbol('svc.localSocket');

export function markLocalSocket(socket: Socket): void {
  (socket as Socket & { [LOCAL_SOCKET]?: true })[LOCAL_SOCKET] = true;
}

export function isLocalSocket(socket: Socket | undefined): boolean {
  return (socket as (Socket & { [LOCAL_SOCKET]?: true }) | undefined)?.[LOCAL_SOCKET] === true;
}
