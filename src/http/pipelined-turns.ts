/**
 * Requests pipelined on one connection (HTTP/1.1) run one at a time, in order: each once the answer before it is
 * complete, as nginx and Go's net/http serve them.
 *
 * node hands the app every request it parses at once, and only queues their answers. A request that came behind one
 * whose answer then closed the connection (a 413 or a 400 of a body that is not JSON, which fastify closes; a 400 of
 * faulty framing; the 503 of a shutdown; any answer with `Connection: close`) therefore ran, a write or a paid upstream
 * call among them, while its answer could never be sent: node drops the answers queued behind one that closes its
 * connection. Whether an answer closes its connection is known only once it is given, so a request behind it waits for
 * it: node hands the connection to the next answer (the response's `socket` event) when the one before it has kept
 * the connection, and the request runs then; when it has closed it, node aborts the requests still queued on it when
 * it closes, and one that waited is dropped without having run.
 *
 * A request that is not pipelined behind another (every one a client with one request at a time on a connection sends,
 * HTTP pools' way) has its connection at once, and passes with two property reads (its connection, whether it is
 * ending). A pipelined one's body is read only at its turn: node's request-receipt timeout, which counts from its
 * first byte, cuts one whose body outgrows the buffers behind an answer slower than that timeout
 * (docs/configuration.md says so).
 *
 * While a request waits its turn, its connection is not read (as nginx and Go's net/http, which read the next request
 * only once the one before is answered): node parses every request as its bytes arrive, so a client writing thousands
 * of small requests in one burst behind a slow answer had svc hold them all (~2.4 KB of heap each, measured), 50,000
 * `GET /health` in 1.6 MB among them. node finishes parsing the read under way (64 KiB) before the pause takes hold, so
 * what a connection holds is the requests of one read at most; the rest stays in the kernel's buffers and then the
 * client's. Reading resumes once no request waits.
 */
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** On a connection: how many requests wait their turn on it. On a request that waited: when it arrived. */
const WAITING = Symbol('requests waiting their turn');
const ARRIVED = Symbol('arrived, pipelined behind another answer');

/**
 * node's own switch for not reading a connection (its _http_server.js, pausing one whose client does not read its
 * answers): `_paused` keeps node from resuming the socket after each request it parses, and makes it pause the parser
 * once the read under way is parsed; both are undone together, as node's own resume on drain does.
 */
type WaitedOn = Socket & { [WAITING]?: number; _paused?: boolean; parser?: { resume(): void } | null };
type Waited = IncomingMessage & { [ARRIVED]?: number };

/** `handler`, run for each request of a connection once the answers before it are complete (module header). */
export function inTurn(handler: RequestListener): RequestListener {
  return (request, response) => {
    // node gives a response its connection at once unless an answer before it is still due on it. It may also give it
    // after an answer that closed the connection: reading a connection natively, node runs the promise chain of each
    // request before it parses the next, and a refusal there (a 413, a 400) may be complete by then. That connection
    // is ending: the request never runs.
    const socket = response.socket;
    if (socket === null) awaitTurn(request, response, handler);
    else if (!socket.writableEnded) handler(request, response);
  };
}

function awaitTurn(request: Waited, response: ServerResponse, handler: RequestListener): void {
  const socket = request.socket as WaitedOn;
  request[ARRIVED] = performance.now();
  socket[WAITING] = (socket[WAITING] ?? 0) + 1;
  stopReading(socket);
  const run = () => {
    request.off('close', drop);
    // Should node want the connection paused still (answers not read), it pauses it again at the next request.
    if (--socket[WAITING]! === 0) resumeReading(socket);
    handler(request, response);
  };
  // Its connection closed after an answer before it (or the client left): it never runs.
  const drop = () => {
    response.off('socket', run);
    socket[WAITING]!--;
  };
  response.once('socket', run);
  request.once('close', drop);
}

function stopReading(socket: WaitedOn): void {
  socket._paused = true;
  socket.pause();
}

function resumeReading(socket: WaitedOn): void {
  socket._paused = false;
  socket.parser?.resume();
  socket.resume();
}

/** Whether requests received on `socket` wait for the answer in flight on it. */
export function requestsWaitOn(socket: Socket): boolean {
  return ((socket as WaitedOn)[WAITING] ?? 0) > 0;
}

/** When a request that waited its turn arrived (`performance.now()`), or undefined when it had its connection at once. */
export function waitedSince(request: IncomingMessage): number | undefined {
  return (request as Waited)[ARRIVED];
}
