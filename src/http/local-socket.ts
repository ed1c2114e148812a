/**
 * The operator at the machine (DESIGN.md section 4) reaches the app two ways, both local-only:
 * - a connection on the data directory's 0600 local socket, which the socket server marks with a symbol no TCP
 *   client can set;
 * - an in-process request (`app.inject`, the CLI when no server owns the data directory), which carries a header
 *   holding a random secret that exists only in this process's memory, so no remote client can present it. The
 *   header counts only on an injected request (whose socket is light-my-request's mock, never a `net.Socket`): on a
 *   real connection it is ignored even if the secret were somehow known.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { Socket } from 'node:net';
import { secretMatcher, sha256Hex } from '../core/ids.ts';

const LOCAL_SOCKET = Symbol('svc.localSocket');

/** Header an in-process caller sets to `LOCAL_OPERATOR_SECRET`. */
export const LOCAL_OPERATOR_HEADER = 'x-svc-local-operator';
/** Fresh per process; never written anywhere. */
export const LOCAL_OPERATOR_SECRET = randomBytes(32).toString('base64url');
const isLocalOperatorSecret = secretMatcher(LOCAL_OPERATOR_SECRET);

export function markLocalSocket(socket: Socket): void {
  (socket as Socket & { [LOCAL_SOCKET]?: true })[LOCAL_SOCKET] = true;
}

export function isLocalSocket(socket: Socket | undefined): boolean {
  return (socket as (Socket & { [LOCAL_SOCKET]?: true }) | undefined)?.[LOCAL_SOCKET] === true;
}

/** Whether a request comes from the local operator (local socket, or injected in-process with the secret). */
export function isLocalOperator(raw: IncomingMessage): boolean {
  if (isLocalSocket(raw.socket)) return true;
  // TCP and TLS connections are net.Sockets; only an injected request has something else here.
  if (raw.socket instanceof Socket) return false;
  const presented = raw.headers[LOCAL_OPERATOR_HEADER];
  return typeof presented === 'string' && isLocalOperatorSecret(sha256Hex(presented));
}
