/**
 * How many terminal columns a text takes, for the tables and the TUI's columns. `.length` counts UTF-16 code units:
 * a CJK character (one unit) takes two columns, an emoji with a skin tone (four units) two, an accent written as a
 * combining mark (one unit) none, so a model or org name in Japanese or with an emoji pushed every later column of
 * its row out of line. Columns are counted by string-width, the library ink lays its screens out with (the same
 * version), so a row svc pads lines up with what ink draws around it: per grapheme, East Asian Wide and Fullwidth
 * characters and emoji sequences two, controls and marks none, ambiguous-width characters one (a Western locale).
 * Cutting and padding work on whole graphemes (Intl.Segmenter).
 */
import stringWidth from 'string-width';

const segmenter = new Intl.Segmenter();
const PRINTABLE_ASCII = /^[\u0020-\u007e]*$/;

/** The columns of one grapheme: 0, 1 or 2. */
function graphemeColumns(grapheme: string): number {
  return stringWidth(grapheme);
}

/** The terminal columns `text` takes (of one line: a control counts as none). */
export function columnsOf(text: string): number {
  return PRINTABLE_ASCII.test(text) ? text.length : stringWidth(text);
}

/** `text` cut to at most `columns` columns, with an ellipsis where it was cut; whole graphemes only. */
export function clipColumns(text: string, columns: number): string {
  if (columns <= 0) return '';
  if (columnsOf(text) <= columns) return text;
  let kept = '';
  let used = 0;
  for (const { segment } of segmenter.segment(text)) {
    const width = graphemeColumns(segment);
    if (used + width > columns - 1) break;
    kept += segment;
    used += width;
  }
  return `${kept}…`;
}

/** `text` cut to its last `columns` columns at most, with an ellipsis in front where it was cut. */
export function clipColumnsStart(text: string, columns: number): string {
  if (columns <= 0) return '';
  if (columnsOf(text) <= columns) return text;
  const graphemes = Array.from(segmenter.segment(text), ({ segment }) => segment);
  let kept = '';
  let used = 0;
  for (let i = graphemes.length - 1; i >= 0; i--) {
    const width = graphemeColumns(graphemes[i]!);
    if (used + width > columns - 1) break;
    kept = graphemes[i]! + kept;
    used += width;
  }
  return `…${kept}`;
}

/** `text` followed by spaces up to `columns` columns (as String.padEnd, counting columns). */
export function padEndColumns(text: string, columns: number): string {
  return text + ' '.repeat(Math.max(0, columns - columnsOf(text)));
}

/** Spaces then `text`, up to `columns` columns (as String.padStart, counting columns). */
export function padStartColumns(text: string, columns: number): string {
  return ' '.repeat(Math.max(0, columns - columnsOf(text))) + text;
}

/**
 * The lines `text` takes wrapped as words at `columns` (as Ink wraps a text): a word that does not fit the line's
 * rest starts the next one, a word wider than a line takes lines of its own. At least the lines it takes, never fewer.
 */
export function wrappedLines(text: string, columns: number): number {
  if (columns <= 0) return 1;
  let lines = 1;
  let used = 0;
  for (const word of text.split(' ')) {
    const width = columnsOf(word);
    if (used > 0 && used + 1 + width <= columns) {
      used += 1 + width;
      continue;
    }
    if (used > 0) lines++;
    lines += Math.max(0, Math.ceil(width / columns) - 1);
    used = width % columns || (width === 0 ? 0 : columns);
  }
  return lines;
}
