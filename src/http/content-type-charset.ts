/**
 * The charsets a request's Content-Type declares, read from its parameters as RFC 9110 5.6.6 writes them: `; name=value`,
 * the value a token or a quoted-string in which `\` escapes the next character (5.6.4). A `;` or `charset=` inside a
 * quoted value is text: split on every `;`, `foo="a;charset=utf-16"` was refused, and `charset="utf\-8"` read as
 * `utf\-8`. One scan over the header, run only past a `;` (most clients send no parameter); a parameter other than
 * `charset` is stepped over without a string being made.
 */

/** What a content type declares that svc does not read as UTF-8. */
export type UnreadCharset =
  /** A charset other than UTF-8 or its subset US-ASCII, as the header names it (escapes undone). */
  | { kind: 'charset'; name: string }
  /** A quoted value left open, or followed by other text than the next `;`: which `charset` is a parameter and which is text depends on the reader. */
  | { kind: 'malformed' };

const MALFORMED: UnreadCharset = { kind: 'malformed' };
const TAB = 0x09;
const SPACE = 0x20;
const QUOTE = 0x22;
const SEMICOLON = 0x3b;
const EQUALS = 0x3d;
const BACKSLASH = 0x5c;
const CHARSET = 'charset';

function isOws(code: number): boolean {
  return code === SPACE || code === TAB;
}

/** Whether `text[start, end)`, spaces around it aside, is `charset` in any case (parameter names are case-insensitive). */
function namesCharset(text: string, start: number, end: number): boolean {
  while (start < end && isOws(text.charCodeAt(start))) start++;
  while (end > start && isOws(text.charCodeAt(end - 1))) end--;
  if (end - start !== CHARSET.length) return false;
  for (let i = 0; i < CHARSET.length; i++) {
    // | 0x20 lowers an ASCII letter; no other character lands on one.
    if ((text.charCodeAt(start + i) | 0x20) !== CHARSET.charCodeAt(i)) return false;
  }
  return true;
}

function isUtf8Name(name: string): boolean {
  const lower = name.toLowerCase();
  return lower === 'utf-8' || lower === 'utf8' || lower === 'us-ascii';
}

/**
 * The first `charset` parameter of a content type that names another charset than UTF-8 (RFC 8259 8.1: JSON exchanged
 * between systems is UTF-8) or US-ASCII, or malformed quoting; null when every one names UTF-8 or there is none.
 * Every `charset` counts: a header naming two (`charset=utf-8; charset=iso-8859-1`) is ambiguous. A parameter with no
 * `=` names nothing and is passed over, as before.
 */
export function unreadCharset(contentType: string | undefined): UnreadCharset | null {
  if (contentType === undefined) return null;
  let at = contentType.indexOf(';');
  if (at === -1) return null;
  const end = contentType.length;
  // Each turn starts on the `;` before a parameter.
  while (at < end) {
    const nameStart = ++at;
    while (at < end && contentType.charCodeAt(at) !== EQUALS && contentType.charCodeAt(at) !== SEMICOLON) at++;
    if (at === end || contentType.charCodeAt(at) === SEMICOLON) continue;
    const isCharset = namesCharset(contentType, nameStart, at);
    at++;
    while (at < end && isOws(contentType.charCodeAt(at))) at++;
    let value = '';
    if (at < end && contentType.charCodeAt(at) === QUOTE) {
      let chunk = ++at;
      for (;;) {
        if (at === end) return MALFORMED;
        const code = contentType.charCodeAt(at);
        if (code === QUOTE) break;
        if (code === BACKSLASH) {
          if (at + 1 === end) return MALFORMED;
          // The escaped character starts the next chunk, and is stepped over so that `\"` does not close the value.
          if (isCharset) value += contentType.slice(chunk, at);
          chunk = at + 1;
          at += 2;
        } else {
          at++;
        }
      }
      if (isCharset) value += contentType.slice(chunk, at);
      at++;
      while (at < end && isOws(contentType.charCodeAt(at))) at++;
      if (at < end && contentType.charCodeAt(at) !== SEMICOLON) return MALFORMED;
    } else {
      const valueStart = at;
      while (at < end && contentType.charCodeAt(at) !== SEMICOLON) at++;
      if (isCharset) value = contentType.slice(valueStart, at).trim();
    }
    if (isCharset && !isUtf8Name(value)) return { kind: 'charset', name: value };
  }
  return null;
}
