/**
 * Transfer codings (RFC 9112 section 6.1). node's parser removes the chunks of a chunked body, but a coding under them
 * (`Transfer-Encoding: gzip, chunked`) it hands on undecoded, and svc decodes none: gzip bytes were read as JSON, and
 * JSON declared gzip was served. svc refuses such a request with 501, as the RFC advises for a coding the server does
 * not implement; its chunks still frame the body, so the connection goes on. `Transfer-Encoding` on an HTTP/1.0
 * request is faulty framing (the RFC: handled as such, and the connection closed after the answer): a 400 that closes.
 * A compressed `Content-Encoding` is src/http/json-body.ts's 415.
 */
import type { IncomingMessage } from 'node:http';
import { AppError } from '../core/errors.ts';

/** Whether a `Transfer-Encoding` value is `chunked` alone (any case; empty list elements allowed, RFC 9110 5.6.1). */
function chunkedOnly(value: string): boolean {
  if (value === 'chunked') return true;
  let codings = 0;
  for (const element of value.split(',')) {
    const coding = element.trim();
    if (coding === '') continue;
    if (coding.toLowerCase() !== 'chunked') return false;
    codings += 1;
  }
  return codings === 1;
}

/** The refusal of a request whose transfer coding svc cannot read, or null (nearly every request: no such header). */
export function transferCodingRefusal(request: IncomingMessage): AppError | null {
  const value = request.headers['transfer-encoding'];
  if (value === undefined) return null;
  if (request.httpVersion === '1.0') {
    return new AppError('invalid_request', { message: 'An HTTP/1.0 request cannot carry Transfer-Encoding (RFC 9112 section 6.1).', headers: { connection: 'close' } });
  }
  return chunkedOnly(value) ? null : new AppError('not_implemented');
}
