/**
 * Lingering close (nginx's `lingering_close`, Go net/http's `closeWriteAndWait`): a connection closed after an answer
 * given while its request's body was still arriving (a 413 `payload_too_large`, refused before the body is read) goes
 * on reading, and discarding, what the client still sends for a while before it is closed.
 *
 * node closes such a connection as soon as the answer is written: `Connection: close`, then `socket.destroySoon()`.
 * A socket closed with received bytes unread makes the kernel send a reset instead of a FIN, and the client, still
 * writing its body, gets EPIPE or ECONNRESET; on Linux the reset also drops the answer it had received but not yet
 * read. So the 413 was often never seen: of twenty 5 MB bodies sent to a 64 KiB limit, 13 ended in the openai SDK's
 * APIConnectionError and 9 in undici's EPIPE (the CLI's "cannot reach svc at ...: write EPIPE").
 *
 * Lingering, the answer's bytes go out followed by a FIN; what arrives after it is read and dropped as it comes (never
 * held) until the client closes its side, which a client does once it has read the answer, or until `LINGER_BYTES` more
 * have come or `LINGER_MS` has passed, whichever is first: a client that would send forever is cut there, reset with
 * its last bytes unread (an answer it has not read by then is lost to it, docs/configuration.md 'Body limits').
 * Nothing read while lingering reaches node's HTTP parser: a request pipelined behind the refused body (its declared
 * bytes sent whole, then another request) was parsed and run, a write among them, though its answer could never be sent.
 *
 * Armed on the error path only (src/http/surface.ts), for a request whose body had not come whole: a request within
 * its limit pays nothing.
 */
import type { IncomingMessage } from 'node:http';
import { Socket } from 'node:net';

/** The most body a lingering connection reads and discards after its answer before it is cut. */
export const LINGER_BYTES = 4 * 1024 * 1024;

/** The longest a connection lingers after its answer, however little the client sends. */
export const LINGER_MS = 2_000;

/**
 * Have the connection of `request` linger when node closes it after the answer (module comment), if the request's
 * body is still arriving. node closes a connection after its last answer by `socket.destroySoon()`, its only caller:
 * replaced on this one socket. No public API tells in time that node is closing the connection: the answer's `finish`
 * reaches a listener of ours after node's own has called `destroySoon()`, and the `http.server.response.finish`
 * diagnostics channel, which comes before it, would be published for every answer. An answer that keeps the connection
 * open never calls it, and node reads and discards the rest of the body itself, as it always has.
 */
export function lingerOnClose(request: IncomingMessage): void {
  const socket = request.socket;
  // An injected request's socket is light-my-request's stand-in.
  if (!(socket instanceof Socket) || request.complete) return;
  socket.destroySoon = () => lingeringClose(socket);
}

/**
 * Whether the body of `request` is still to come on its connection: its headers announce one (a transfer coding, or a
 * length above zero) and it has not all arrived. (`complete` is not yet set for a request without a body while its
 * hooks run.) An injected request has no connection, and no `complete`.
 */
export function bodyStillComing(request: IncomingMessage): boolean {
  if (!(request.socket instanceof Socket) || request.complete) return false;
  const { headers } = request;
  return headers['transfer-encoding'] !== undefined || (headers['content-length'] !== undefined && headers['content-length'] !== '0');
}

function lingeringClose(socket: Socket): void {
  if (socket.destroyed) return;
  // The answer's bytes, then a FIN. The socket closes once the client's FIN has come as well or is cut below.
  socket.end();
  const cut = () => socket.destroy();
  const timer = setTimeout(cut, LINGER_MS);
  socket.once('close', () => clearTimeout(timer));
  // node's parser reads a connection through the socket's `data` listener (or from its handle directly, until a
  // `data` listener is added): without it, what comes is read by the listener below only, and dropped, counted as it
  // passes. node's `end` listener stays: at the client's FIN, its parser, cut off mid-body, reports the body short to
  // `clientError` (src/http/client-errors.ts), which closes the connection without a word, the socket being ended.
  socket.removeAllListeners('data');
  let discarded = 0;
  socket.on('data', (chunk: Buffer) => {
    discarded += chunk.length;
    if (discarded > LINGER_BYTES) cut();
  });
  // Paused by node if answers had piled up unread; the client's bytes must still be read, or the close resets.
  socket.resume();
  readAgain(socket);
}

/** What a socket reads through: `reading` is node's own record of whether `readStart()` is in effect. */
interface SocketHandle {
  reading: boolean;
  readStart(): number;
}

/**
 * Start reading `socket` again if node had stopped it. While node's parser read the socket's handle directly, a body
 * that outran its answer filled the request's stream, which nobody reads when the request is refused, and node stopped
 * the handle to hold the rest back; taken back from the parser, the socket does not start it again: its stream still
 * awaits the first read it asked for before the parser took the handle, so `resume()` asks for none. The linger then
 * read nothing: the client's writes stalled and the 2 s cut reset the connection with the body unread, dropping the
 * answer of a client that reads once it has sent its body. Started as node starts a parser's handle again.
 */
function readAgain(socket: Socket): void {
  const handle = (socket as Socket & { _handle?: SocketHandle | null })._handle;
  if (!handle || handle.reading) return;
  handle.reading = true;
  if (handle.readStart() < 0) socket.destroy();
}
