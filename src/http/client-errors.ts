/**
 * Errors node's HTTP parser raises before a request exists: a header section over node's limit (a URL over it alone is
 * a 414 where svc can tell, `overlongTargetOf`), bytes that are not HTTP, a request that did not arrive within the
 * request timeout. fastify's default answer is a body of its own (`{"error": "Request Header Fields Too Large", ...}`);
 * svc answers in the error shape of the surface the request line names, as it does every other error, then closes the
 * connection as node does (the parser cannot go on). Like every other answer it carries a request id (docs/api.md,
 * request ids) where its surface puts one, and is logged under it: a fresh id, as the request's headers were not read,
 * but a client's own well-formed `x-request-id` for a request cut after the app took it. Such a request's generated
 * id is not recovered: the app keeps it on its reply only, and storing it where this code reaches it would cost every
 * request for the sake of a rare one.
 *
 * Also the requests node would answer itself, bare (no body) or not at all, before the app sees them: a CONNECT (a
 * tunnel, what proxies serve) and an `Expect` other than `100-continue`.
 */
import { STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyBaseLogger } from 'fastify';
import { AppError } from '../core/errors.ts';
import { MESSAGES_REQUEST_ID, renderError, surfaceOfUrl, type ErrorSurface } from './error-shapes.ts';
import { newRequestId, requestIdOf } from './request-ids.ts';
import { NOSNIFF, NOSNIFF_HEADER } from './nosniff.ts';

/** The app's logger, where fastify logs the requests it serves under the same `reqId`. */
export type RefusalLog = Pick<FastifyBaseLogger, 'info'>;

export interface ClientError extends Error {
  code?: string;
  /** What the parser had read of the request when it failed (a Buffer, node's `clientError`). */
  rawPacket?: unknown;
  /** Where in `rawPacket` the parser failed. */
  bytesParsed?: number;
}

const URI_TOO_LONG = 'The URL is longer than the 16 KiB a request line and its headers may have together.';

/** The AppError of a parser failure. */
export function clientAppError(code: string | undefined): AppError {
  if (code === 'HPE_HEADER_OVERFLOW') return new AppError('headers_too_large');
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return new AppError('request_timeout');
  return new AppError('invalid_request', { message: 'The request is not valid HTTP.' });
}

/** A request line's method and the start of its target (enough to tell its surface). */
const REQUEST_LINE_START = /^[A-Z]+ (\S+)/;

/**
 * The start of the target of a request whose URL alone is over node's header section limit, or null. node raises the
 * same HPE_HEADER_OVERFLOW for a long URL and for long headers; it is the URL's when the packet that overflowed holds
 * the start of the request and the parser failed before the request line's end (where node counts the URL). A URL
 * that arrived in several packets cannot be told apart this way (node keeps no earlier packet): it stays a 431.
 */
export function overlongTargetOf(error: ClientError): string | null {
  const raw = error.rawPacket;
  if (error.code !== 'HPE_HEADER_OVERFLOW' || !Buffer.isBuffer(raw) || typeof error.bytesParsed !== 'number') return null;
  const start = REQUEST_LINE_START.exec(raw.subarray(0, 256).toString('latin1'));
  if (start === null) return null;
  const lineEnd = raw.indexOf('\r\n');
  return lineEnd === -1 || lineEnd >= error.bytesParsed ? start[1]! : null;
}

/** The request target of a request line at the start of `raw`, or null if none is there. */
export function requestTargetOf(raw: unknown): string | null {
  if (!Buffer.isBuffer(raw)) return null;
  // Only the first line; a target longer than a line of 8 KiB is not one to route by anyway.
  const line = raw.subarray(0, 8192).toString('latin1').split('\r\n', 1)[0]!;
  return /^[A-Z]+ (\/\S*) HTTP\/1\.[01]$/.exec(line)?.[1] ?? null;
}

/** The headers that carry an answer's request id on `surface`: `x-request-id`, and on the messages wire `request-id`. */
function requestIdHeaders(surface: ErrorSurface, requestId: string): Record<string, string> {
  return surface === 'messages' ? { 'x-request-id': requestId, [MESSAGES_REQUEST_ID]: requestId } : { 'x-request-id': requestId };
}

/**
 * A raw HTTP answer: the error's body in the shape of the surface `target` names (management without one), the request
 * id where that surface's answers carry it, and `Connection: close`.
 */
function rawErrorResponse(appError: AppError, target: string | null, requestId: string): string {
  const surface: ErrorSurface = target === null ? 'management' : surfaceOfUrl(target);
  const body = JSON.stringify(renderError(surface, appError, requestId));
  const ids = Object.entries(requestIdHeaders(surface, requestId))
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  return (
    `HTTP/1.1 ${appError.status} ${STATUS_CODES[appError.status]}\r\n${ids}${NOSNIFF_HEADER}: ${NOSNIFF}\r\n` +
    `Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`
  );
}

/**
 * One log line per answer given here, under its request id (fastify logs none of these requests, or, for one cut
 * after the app took it, only its `incoming request`). Neither the URL nor any header: the parser read none of them
 * for sure, and they may hold a credential.
 */
function logRefusal(log: RefusalLog, requestId: string, error: AppError, parserError?: string): void {
  const fields = { reqId: requestId, res: { statusCode: error.status }, code: error.code, ...(parserError ? { parserError } : {}) };
  log.info(fields, 'request refused by the HTTP layer');
}

/** What node keeps on a connection (internals its own `clientError` default reads too). */
type HttpSocket = Duplex & {
  /** The answer being written on the connection, the first of those due (pipelining); null when none is. */
  _httpMessage?: (ServerResponse & { req?: IncomingMessage }) | null;
  /** Its parser; `incoming` is the last request whose headers came whole (`complete` once its body has too). */
  parser?: { incoming?: IncomingMessage | null } | null;
};

/** On a connection whose bytes failed to parse behind requests still being answered: its refusal waits for them. */
const REFUSING = Symbol('refusal waiting for the answers due');

/**
 * node's `clientError` handler for svc's servers (fastify's `clientErrorHandler`, and the local socket's): the error
 * answered in the shape of the surface of the request it cut, then the connection closed. Answered only when that
 * answer can be the cut request's own; else the connection is only closed:
 * - a request whose body was still arriving (the request timeout, a broken chunk) has been handed to the app: its
 *   target is the one to shape by, and when its answer is already out (an early 401 or 413) a second one would answer
 *   nothing the client asked; while it is still due, ours would be taken for its.
 * Bytes that fail to parse after whole requests whose answers are still due (in flight, a stream, or pipelined ones
 * waiting their turn) are the next request: its refusal waits for those answers, which node would otherwise cut off
 * with the connection (node's own `clientError` default does: the requests ran, their answers were lost).
 */
export function answerClientError(error: ClientError, socket: Duplex, log: RefusalLog): void {
  // A reset connection has nobody to answer (node's own rule).
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const connection = socket as HttpSocket & { [REFUSING]?: true };
  // node's parser, once failed, fails again on each read after: the refusal already waits.
  if (connection[REFUSING]) return;
  const { _httpMessage: answering, parser } = connection;
  const cut = parser?.incoming?.complete === false ? parser.incoming : null;
  if (cut === null && answering) {
    connection[REFUSING] = true;
    // The answers before it end the connection themselves when one closes it (`Connection: close`).
    return whenNoAnswerDue(connection, () => {
      if (socket.writable) socket.end(refusal(error, null, log), () => socket.destroy());
    });
  }
  const own = answering ? !answering.headersSent && answering.req === cut : cut === null;
  if (socket.writable && own) socket.write(refusal(error, cut, log));
  socket.destroy(error);
}

/** Runs `then` once every answer due on `socket` is complete or the connection gone. */
function whenNoAnswerDue(socket: HttpSocket, then: () => void): void {
  const answer = socket._httpMessage;
  if (!answer) return then();
  // node's own `finish` listener, added when the response was made, runs first: it hands the connection to the next
  // answer due, if any.
  answer.once('finish', () => whenNoAnswerDue(socket, then));
}

/** The raw answer to a parser's error, logged: shaped by the request it cut, or by the request line it failed on. */
function refusal(error: ClientError, cut: IncomingMessage | null, log: RefusalLog): string {
  const requestId = cut === null ? newRequestId() : requestIdOf(cut.headers);
  const overlong = cut === null ? overlongTargetOf(error) : null;
  const appError = overlong !== null ? new AppError('uri_too_long', { message: URI_TOO_LONG }) : clientAppError(error.code);
  logRefusal(log, requestId, appError, error.code);
  return rawErrorResponse(appError, overlong ?? (cut === null ? requestTargetOf(error.rawPacket) : (cut.url ?? null)), requestId);
}

/**
 * Answer, in svc's error shape, the requests node answers itself unless the server listens for them: a CONNECT (node
 * closes the connection without a word) is 405, an `Expect` other than `100-continue` (node: a bare 417) 417. Their
 * headers were read: the request id is the client's own when well formed, as the app's.
 */
export function answerNodeRefusals(server: Server, log: RefusalLog): void {
  server.on('connect', (request: IncomingMessage, socket: Duplex) => {
    const error = new AppError('method_not_allowed', { message: 'CONNECT is not served: svc is not a proxy.' });
    if (!socket.writable) return void socket.destroy();
    const requestId = requestIdOf(request.headers);
    // Its target is an authority (`host:port`), no path: the management shape.
    socket.end(rawErrorResponse(error, null, requestId), () => socket.destroy());
    logRefusal(log, requestId, error);
  });
  server.on('checkExpectation', (request: IncomingMessage, response: ServerResponse) => {
    const error = new AppError('expectation_failed');
    const requestId = requestIdOf(request.headers);
    const surface = surfaceOfUrl(request.url ?? '/');
    const body = JSON.stringify(renderError(surface, error, requestId));
    // Its body, if it sends one anyway, is not read: the connection ends with the answer.
    response.writeHead(error.status, {
      ...requestIdHeaders(surface, requestId),
      [NOSNIFF_HEADER]: NOSNIFF,
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(body),
      connection: 'close',
    });
    response.end(body);
    logRefusal(log, requestId, error);
  });
}
