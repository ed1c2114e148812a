/**
 * Errors node's HTTP parser raises before a request exists: a header section over node's limit, bytes that are not
 * HTTP, a request that did not arrive within the request timeout. fastify's default answer is a body of its own
 * (`{"error": "Request Header Fields Too Large", ...}`); svc answers in the error shape of the surface the request
 * line names, as it does every other error, then closes the connection as node does (the parser cannot go on).
 */
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { AppError } from '../core/errors.ts';
import { renderError, surfaceOfUrl } from './error-shapes.ts';

export interface ClientError extends Error {
  code?: string;
  /** What the parser had read of the request when it failed (a Buffer, node's `clientError`). */
  rawPacket?: unknown;
}

/** The AppError of a parser failure. */
export function clientAppError(code: string | undefined): AppError {
  if (code === 'HPE_HEADER_OVERFLOW') return new AppError('headers_too_large');
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return new AppError('request_timeout');
  return new AppError('invalid_request', { message: 'The request is not valid HTTP.' });
}

/** The request target of a request line at the start of `raw`, or null if none is there. */
export function requestTargetOf(raw: unknown): string | null {
  if (!Buffer.isBuffer(raw)) return null;
  // Only the first line; a target longer than a line of 8 KiB is not one to route by anyway.
  const line = raw.subarray(0, 8192).toString('latin1').split('\r\n', 1)[0]!;
  return /^[A-Z]+ (\/\S*) HTTP\/1\.[01]$/.exec(line)?.[1] ?? null;
}

/** The raw HTTP answer to a parser failure: the surface's error body, and `Connection: close`. */
export function clientErrorResponse(error: ClientError): string {
  const appError = clientAppError(error.code);
  const target = requestTargetOf(error.rawPacket);
  const body = JSON.stringify(renderError(target === null ? 'management' : surfaceOfUrl(target), appError));
  return (
    `HTTP/1.1 ${appError.status} ${STATUS_CODES[appError.status]}\r\n` +
    `Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`
  );
}

/** What node keeps on a connection: the response it is writing, if any (its own `clientError` default reads it). */
type HttpSocket = Duplex & { _httpMessage?: { headersSent: boolean } | null };

/** node's `clientError` handler for svc's servers (fastify's `clientErrorHandler`, and the local socket's). */
export function answerClientError(error: ClientError, socket: Duplex): void {
  // A reset connection has nobody to answer (node's own rule).
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  // Bytes that are not HTTP can follow a request whose answer is under way (pipelined behind a stream): an answer of
  // our own written then would land inside that answer's body. node's default answers only when no answer has started.
  if (socket.writable && (socket as HttpSocket)._httpMessage?.headersSent !== true) socket.write(clientErrorResponse(error));
  socket.destroy(error);
}
