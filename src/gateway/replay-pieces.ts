/**
 * The pieces a stored answer's text is replayed in, as deltas of its wire's stream (a cached answer served as a
 * stream, and the mock provider's streams).
 *
 * A replay goes out at once, so its pieces only have to look like a stream to a client; each piece costs a whole
 * event around it (a chat chunk repeats the answer's id, model and top-level fields). One piece per word made a
 * stored answer of short words replay at ~100 times its size (2 MB of one-letter words, 1.6 GB with eight repeated
 * fields; 60 MB ran svc out of heap), and built every piece at once. So a text is cut at whitespace into pieces of at
 * least MIN_PIECE_CHARS characters, and into at most about MAX_PIECES of them: the events a replay adds are bounded
 * whatever the answer's size.
 */

export const MIN_PIECE_CHARS = 64;
export const MAX_PIECES = 128;

/** The length a text's pieces aim at: at least MIN_PIECE_CHARS, and long enough that there are about MAX_PIECES. */
function pieceLength(text: string): number {
  return Math.max(MIN_PIECE_CHARS, Math.ceil(text.length / MAX_PIECES));
}

/**
 * `text` cut into pieces that end after a run of whitespace (a word is never split), each at least the piece length
 * long but the last; a text without whitespace past a piece's length stays whole.
 */
export function textPieces(text: string): string[] {
  const length = pieceLength(text);
  const pieces: string[] = [];
  const whitespace = /\s+/g;
  let start = 0;
  while (start < text.length) {
    whitespace.lastIndex = start + length - 1;
    const found = whitespace.exec(text);
    const end = found ? found.index + found[0].length : text.length;
    pieces.push(text.slice(start, end));
    start = end;
  }
  return pieces;
}

/**
 * `text` (a tool call's JSON arguments) cut into pieces of the piece length, anywhere but inside a surrogate pair:
 * JSON's fragments are joined before they are read.
 */
export function jsonPieces(text: string): string[] {
  const length = pieceLength(text);
  const pieces: string[] = [];
  let start = 0;
  while (start < text.length) {
    let end = Math.min(start + length, text.length);
    // Not between the two halves of a character outside the BMP.
    const last = text.charCodeAt(end - 1);
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end += 1;
    pieces.push(text.slice(start, end));
    start = end;
  }
  return pieces;
}
