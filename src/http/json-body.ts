/**
 * JSON request bodies: UTF-8 only (declared so, and valid), fastify's own parser (secure-json-parse, refusing `__proto__` and
 * `constructor.prototype` keys), then the nesting bound of src/core/json-depth.ts (a body nested tens of thousands
 * deep was a 500: the stack overflowed in the canonical JSON of its cache key), no lone UTF-16 surrogate in any string,
 * and for the management API no NUL in any string and no name twice in one object.
 */
import { isUtf8 } from 'node:buffer';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError } from '../core/errors.ts';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../core/json-depth.ts';
import { duplicateNamePath } from '../core/json-duplicate-names.ts';
import { holdsLoneSurrogate, holdsNul } from '../core/text.ts';
import { unreadCharset } from './content-type-charset.ts';
import { issueLabel, surfaceOfUrl } from './error-shapes.ts';

/** The longest charset name an error repeats: a header may be kilobytes long. */
const MAX_CHARSET_SHOWN = 64;

/**
 * The escapes a lone surrogate can only come from (valid UTF-8 encodes none): `\uD800` to `\uDFFF`, and a few more
 * (`\uD000`, a Hangul syllable), any case. A body holding neither prefix is not walked for one: one native byte
 * search each, where most bodies escape nothing.
 */
const SURROGATE_ESCAPE_LOWER = Buffer.from('\\ud');
const SURROGATE_ESCAPE_UPPER = Buffer.from('\\uD');

function mayEscapeSurrogate(bytes: Buffer): boolean {
  return bytes.includes(SURROGATE_ESCAPE_LOWER) || bytes.includes(SURROGATE_ESCAPE_UPPER);
}

/** The 400 of a name sent twice, in the shape of a field's validation failure: its path first, and in `details.issues`. */
function duplicateNameError(path: Array<string | number>): AppError {
  const message = 'sent twice in one object: send each field once (JSON readers differ on which of the two counts)';
  return new AppError('invalid_request', { message: `${issueLabel(path)}: ${message}`, details: { issues: [{ path: path.join('.'), message }] } });
}

/**
 * Replace the app's `application/json` parser with fastify's own plus these checks (route body limits still apply).
 * JSON is the only body svc reads: fastify's `text/plain` parser goes too, so such a body is a 415 like any other
 * type (it was read as a string, and answered with a 400 about the fields it did not have).
 */
export function installJsonBodyParser(app: FastifyInstance): void {
  const parse = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser(['application/json', 'text/plain']);
  // parseAs 'buffer': fastify's 'string' decodes with replacement, so bytes that are not UTF-8 (a Latin-1 'café' sent
  // without a charset) became U+FFFD and the request was served with other text than was sent. The bytes are checked
  // (simdutf) and decoded once here, as fastify would have: with fastify's copy of the bytes, ~2 µs more per 10 KB body
  // (~0.1 µs per 1 KB), against ~8 µs for JSON.parse alone.
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request: FastifyRequest, bytes: string | Buffer, done) => {
    // svc decodes no compression: a gzipped body would be answered as malformed JSON.
    const encoding = request.headers['content-encoding'];
    if (encoding !== undefined && encoding.toLowerCase() !== 'identity') {
      return done(new AppError('unsupported_media_type', { message: 'The request body must be JSON as sent: svc does not decode a Content-Encoding (gzip, br, ...).' }), undefined);
    }
    // Every body is decoded as UTF-8: one declared in another charset would be read as other text than was sent
    // (a Latin-1 'é' became U+FFFD and the request was served), or as malformed JSON (UTF-16).
    const unread = unreadCharset(request.headers['content-type']);
    if (unread?.kind === 'charset') {
      return done(new AppError('unsupported_media_type', { message: `The request body must be JSON in UTF-8 (RFC 8259): svc does not read charset=${unread.name.slice(0, MAX_CHARSET_SHOWN)}.` }), undefined);
    }
    if (unread?.kind === 'malformed') {
      return done(new AppError('unsupported_media_type', { message: 'The request body\'s Content-Type has a quoted parameter value that is not closed, or is followed by other text than a `;` (RFC 9110 5.6.6): its charset cannot be read.' }), undefined);
    }
    // parseAs 'buffer': the body is a Buffer.
    if (!isUtf8(bytes as Buffer)) {
      return done(new AppError('invalid_json', { message: 'The request body is not valid UTF-8 (RFC 8259: JSON is UTF-8).' }), undefined);
    }
    const text = (bytes as Buffer).toString('utf8');
    parse(request, text, (error: Error | null, value?: unknown) => {
      if (error) return done(error, undefined);
      if (nestsDeeperThan(value, MAX_JSON_DEPTH)) {
        return done(new AppError('invalid_json', { message: `The request body nests objects and arrays more than ${MAX_JSON_DEPTH} levels deep.` }), undefined);
      }
      // An escaped lone surrogate ("\ud800") parses into a string that is no Unicode text: what svc hashed (its escape,
      // in canonical JSON) and what the data file's driver stored (other bytes, sometimes cut short) differed, so a run
      // whose model was such a name failed its own integrity check, and a key's name was stored as other text. A
      // well-formed pair (an emoji, as Python's json.dumps escapes it) is kept.
      if (mayEscapeSurrogate(bytes as Buffer) && holdsLoneSurrogate(value)) {
        return done(new AppError('invalid_json', { message: 'The request body escapes a lone UTF-16 surrogate (\\uD800 to \\uDFFF without its pair), which is no Unicode character (RFC 8259, section 8.2).' }), undefined);
      }
      // The management API stores what it is sent in plain text columns, which the data file's driver cuts at a NUL:
      // 'victim@example.com\u0000x' signed up as 'victim@example.com'. Gateway bodies keep theirs (a prompt is stored
      // as escaped JSON; the fields stored as text, such as the model, are validated one by one).
      if (surfaceOfUrl(request.url) === 'management') {
        if (holdsNul(value)) {
          return done(new AppError('invalid_request', { message: 'The request body holds a NUL character (U+0000), which svc does not store.' }), undefined);
        }
        // Read the text again for a name sent twice in one object (src/core/json-duplicate-names.ts says why): one pass
        // over the management bodies only, the /v1 wires' larger ones pay nothing.
        const duplicate = duplicateNamePath(text);
        if (duplicate !== null) return done(duplicateNameError(duplicate), undefined);
      }
      done(null, value);
    });
  });
}
