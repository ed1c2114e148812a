/**
 * Percent-encodings svc refuses in a request target, checked by the first request hook (src/http/app.ts):
 * - a NUL (`%00`) anywhere: it would reach the data file cut short at it (its driver reads text as C strings), so
 *   `key_abc%00junk` would name `key_abc`;
 * - an unreserved character (letter, digit, `-._~`) encoded in the path. The router decodes the path before matching,
 *   while the surface (error shape, `x-api-key`, the management API's body rules) is read from the raw path
 *   (src/http/error-shapes.ts): `/v1/%6dessages` was served by the messages wire but shaped as the chat wire. No client
 *   encodes such a character (RFC 3986 section 2.3: they are equivalent unencoded), so refusing it costs nobody and
 *   keeps the two readings of the path the same; the encodings a path may need (`%2F`, `%20`, ...) are not letters of
 *   a route's fixed part, so they cannot change which surface a route is.
 */
import { AppError } from '../core/errors.ts';

/** The byte of the two hex digits at `at` in `text`, or -1 when there are not two. */
function hexByteAt(text: string, at: number): number {
  const high = hexDigit(text.charCodeAt(at));
  const low = hexDigit(text.charCodeAt(at + 1));
  return high === -1 || low === -1 ? -1 : high * 16 + low;
}

function hexDigit(code: number): number {
  if (code >= 48 && code <= 57) return code - 48; // 0-9
  const lower = code | 0x20;
  return lower >= 97 && lower <= 102 ? lower - 87 : -1; // a-f, A-F
}

/** RFC 3986 section 2.3: ALPHA / DIGIT / "-" / "." / "_" / "~". */
function isUnreserved(byte: number): boolean {
  const lower = byte | 0x20;
  return (lower >= 97 && lower <= 122) || (byte >= 48 && byte <= 57) || byte === 45 || byte === 46 || byte === 95 || byte === 126;
}

/** The refusal of a request target's percent-encoding (module header), or null. A target without `%` costs one scan. */
export function percentEncodingRefusal(url: string): AppError | null {
  let at = url.indexOf('%');
  if (at === -1) return null;
  const queryAt = url.indexOf('?');
  const pathEnd = queryAt === -1 ? url.length : queryAt;
  for (; at !== -1; at = url.indexOf('%', at + 1)) {
    const byte = hexByteAt(url, at + 1);
    if (byte === 0) return new AppError('invalid_request', { message: 'The URL holds a NUL character (%00).' });
    if (at < pathEnd && isUnreserved(byte)) {
      const encoded = url.slice(at, at + 3).toUpperCase();
      return new AppError('invalid_request', {
        message: `The URL path percent-encodes a character that is sent as it is (${encoded} is ${String.fromCharCode(byte)}): send it unencoded.`,
      });
    }
  }
  return null;
}
