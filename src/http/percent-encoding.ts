/**
 * Percent-encodings svc refuses in a request target, checked by the first request hook (src/http/app.ts):
 * - a NUL (`%00`) anywhere: it would reach the data file cut short at it (its driver reads text as C strings), so
 *   `key_abc%00junk` would name `key_abc`;
 * - an unreserved character (letter, digit, `-._~`) encoded in the path. The router decodes the path before matching,
 *   while the surface (error shape, `x-api-key`, the management API's body rules) is read from the raw path
 *   (src/http/error-shapes.ts): `/v1/%6dessages` was served by the messages wire but shaped as the chat wire. No client
 *   encodes such a character (RFC 3986 section 2.3: they are equivalent unencoded), so refusing it costs nobody and
 *   keeps the two readings of the path the same; the encodings a path may need (`%2F`, `%20`, ...) are not letters of
 *   a route's fixed part, so they cannot change which surface a route is;
 * - in the query, a `%` not followed by two hex digits, or encoded bytes that are not UTF-8 (`%ff`, a cut sequence
 *   `%E2%80`, an encoded surrogate `%ED%A0%80`, an overlong `%C0%AF`). The query parser keeps such a value as its
 *   literal text, so `?model=%ff` filtered on the four characters `%ff`, which nobody sent, and answered 200 (the
 *   path's own bad encodings are the router's 400 already). The refusal names the parameter (docs/api.md).
 */
import { AppError } from '../core/errors.ts';
import { issueLabel } from './error-shapes.ts';

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

const NUL_REFUSAL_MESSAGE = 'The URL holds a NUL character (%00).';

/** Refuses what is not UTF-8 (cut, overlong, surrogate, past U+10FFFF) rather than replacing it with U+FFFD. */
const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/** The refusal of a request target's percent-encoding (module header), or null. A target without `%` costs one scan. */
export function percentEncodingRefusal(url: string): AppError | null {
  let at = url.indexOf('%');
  if (at === -1) return null;
  const queryAt = url.indexOf('?');
  const pathEnd = queryAt === -1 ? url.length : queryAt;
  for (; at !== -1; at = url.indexOf('%', at + 1)) {
    const byte = hexByteAt(url, at + 1);
    if (byte === 0) return new AppError('invalid_request', { message: NUL_REFUSAL_MESSAGE });
    if (at < pathEnd) {
      if (isUnreserved(byte)) {
        const encoded = url.slice(at, at + 3).toUpperCase();
        return new AppError('invalid_request', {
          message: `The URL path percent-encodes a character that is sent as it is (${encoded} is ${String.fromCharCode(byte)}): send it unencoded.`,
        });
      }
      continue;
    }
    if (byte === -1) return queryRefusal(url, queryAt, at, 'holds a % that is not followed by two hex digits (send a % as %25)');
    if (byte < 0x80) continue;
    // A character past ASCII is the run of encoded bytes starting here; read it as a whole.
    const bytes: number[] = [];
    let end = at;
    for (let next = byte; next !== -1 && url.charCodeAt(end) === 37; next = hexByteAt(url, end + 1)) {
      if (next === 0) return new AppError('invalid_request', { message: NUL_REFUSAL_MESSAGE });
      bytes.push(next);
      end += 3;
    }
    try {
      strictUtf8.decode(Uint8Array.from(bytes));
    } catch {
      return queryRefusal(url, queryAt, at, 'percent-encodes bytes that are not UTF-8');
    }
    at = end - 1;
  }
  return null;
}

/**
 * The refusal of the query parameter holding the encoding at `at`, named as the query's parsers split it (on `&`,
 * then at the first `=`). Its name is given as sent, never its value (which may hold a token).
 */
function queryRefusal(url: string, queryAt: number, at: number, problem: string): AppError {
  const start = Math.max(url.lastIndexOf('&', at), queryAt) + 1;
  const separator = url.indexOf('&', start);
  const parameterEnd = separator === -1 ? url.length : separator;
  const equals = url.indexOf('=', start);
  const nameEnd = equals === -1 || equals > parameterEnd ? parameterEnd : equals;
  const name = url.slice(start, nameEnd);
  const message = `its ${at < nameEnd ? 'name' : 'value'} ${problem}`;
  // Labelled as the error mapping labels an issue's path: an empty name (`?=%ff`) is written `""`.
  return new AppError('invalid_request', { message: `${issueLabel([name])}: ${message}`, details: { issues: [{ path: name, message }] } });
}
