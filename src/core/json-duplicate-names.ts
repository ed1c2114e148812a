/**
 * Duplicate member names in a JSON text (`{"admin":false,"admin":true}`). RFC 8259 section 4 says only that names
 * SHOULD be unique, and readers differ on which of two counts: `JSON.parse` keeps the last, other parsers the first or
 * refuse the text (I-JSON, RFC 7493, forbids duplicates). So one body read two ways is two requests: what a proxy, a
 * log or a reviewer saw was not what svc served. `JSON.parse` leaves no trace of a duplicate in its value, so the text
 * itself is scanned.
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;

/** A container open at the scan's position: an object's names so far and the one being read, or an array's index. */
type Frame = { names: Set<string>; name: string; expectsName: boolean } | { index: number };

/** The index of the `"` that closes the string opened at `open`: the next one not escaped by a backslash. */
function closingQuote(text: string, open: number): number {
  let at = open;
  for (;;) {
    at = text.indexOf('"', at + 1);
    let backslashes = 0;
    while (text.charCodeAt(at - 1 - backslashes) === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return at;
  }
}

/**
 * The path of the first name that an object of `text` holds twice (`['value', 'grants', 0, 'appId']`, its own name
 * last), or null when there is none. Names are compared as they decode: `"\u006eame"` is `"name"`. `text` must be valid
 * JSON (parse it first): the scan checks no syntax. One pass; string contents are stepped over by `indexOf`.
 */
export function duplicateNamePath(text: string): Array<string | number> | null {
  const frames: Frame[] = [];
  for (let at = 0; at < text.length; at++) {
    const code = text.charCodeAt(at);
    if (code === QUOTE) {
      const close = closingQuote(text, at);
      const top = frames[frames.length - 1];
      if (top !== undefined && 'names' in top && top.expectsName) {
        const raw = text.slice(at + 1, close);
        const name = raw.includes('\\') ? (JSON.parse(text.slice(at, close + 1)) as string) : raw;
        if (top.names.has(name)) return [...frames.slice(0, -1).map((frame) => ('names' in frame ? frame.name : frame.index)), name];
        top.names.add(name);
        top.name = name;
        top.expectsName = false;
      }
      at = close;
    } else if (code === OPEN_OBJECT) {
      frames.push({ names: new Set(), name: '', expectsName: true });
    } else if (code === OPEN_ARRAY) {
      frames.push({ index: 0 });
    } else if (code === CLOSE_OBJECT || code === CLOSE_ARRAY) {
      frames.pop();
    } else if (code === COMMA) {
      const top = frames[frames.length - 1]!;
      if ('names' in top) top.expectsName = true;
      else top.index++;
    }
  }
  return null;
}
