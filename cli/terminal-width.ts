/**
 * How many terminal columns a text takes, for the tables and the TUI's columns. `.length` counts UTF-16 code units:
 * a CJK character (one unit) takes two columns, an emoji with a skin tone (four units) two, an accent written as a
 * combining mark (one unit) none, so a model or org name in Japanese or with an emoji pushed every later column of
 * its row out of line. Columns are counted per grapheme (Intl.Segmenter), as terminals draw them:
 * - a grapheme of controls, format characters and combining marks only takes none;
 * - an emoji takes two: a sequence of the Unicode emoji list (RGI: with VS16, a skin tone, as a ZWJ sequence, a keycap,
 *   a flag or a tag sequence), a keycap without VS16, or a ZWJ sequence of two pictographs or more. A skin tone makes an
 *   emoji of a text-default base too (☝🏽 ✌🏿 ✍🏻 🖐🏽): counted as its base alone (one column), it pushed the rest of
 *   its row out of line by one. A pair of regional indicators that names no flag is a letter in a box, one column;
 * - otherwise its first visible character decides: East Asian Wide or Fullwidth takes two, anything else one.
 * Ambiguous-width characters (Greek, Cyrillic, box drawing) count as one, as in a Western locale.
 *
 * Ink lays its screens out with string-width, which it neither exports nor is a dependency of this package, so the
 * same rules are written here: on every assigned code point of the Unicode version of Node 20, and on emoji
 * sequences, they give what ink's string-width 8 gives (compared when written; test/tui/not-svc.test.ts holds a row of
 * emoji sequences against it).
 */

const segmenter = new Intl.Segmenter();
const PRINTABLE_ASCII = /^[\u0020-\u007e]*$/;
const VISIBLE = /[^\p{Cc}\p{Cf}\p{Mn}\p{Me}\p{Default_Ignorable_Code_Point}]/u;
/** An emoji by default; a regional indicator is one only paired into a flag (alone it is a letter in a box). */
const EMOJI_PRESENTATION = /^(?!\p{Regional_Indicator})\p{Emoji_Presentation}/u;
/**
 * A whole grapheme that is an emoji of the Unicode emoji list (RGI). Built at run time: the `v` flag it needs (Node 20
 * has it) is past the ES2022 target TypeScript checks regex literals against.
 */
const RGI_EMOJI = new RegExp('^\\p{RGI_Emoji}$', 'v');
/** A keycap without its VS16, which terminals draw as the emoji all the same. */
const BARE_KEYCAP = /^[0-9#*]\u20e3$/;
const PICTOGRAPHS = /\p{Extended_Pictographic}/gu;

/** Whether a grapheme is drawn as an emoji, two columns, whatever its first character's own width. */
function isEmojiSequence(grapheme: string): boolean {
  if (RGI_EMOJI.test(grapheme) || BARE_KEYCAP.test(grapheme)) return true;
  // A ZWJ sequence not on the list (a family of other members): an emoji if it joins two pictographs or more. Real
  // emoji are far shorter than 50 units; a longer grapheme is not read through.
  return grapheme.length <= 50 && grapheme.includes('\u200d') && (grapheme.match(PICTOGRAPHS)?.length ?? 0) >= 2;
}

/**
 * East Asian Wide (W) and Fullwidth (F) code points of Unicode 16 (EastAsianWidth.txt), as ink's string-width counts
 * them, that are not emoji (Emoji_Presentation catches those), as sorted [first, last] pairs.
 */
const WIDE: ReadonlyArray<readonly [number, number]> = [
  [0x1100, 0x115f], // Hangul Jamo initial consonants
  [0x2329, 0x232a], // angle brackets
  [0x2630, 0x2637], // trigrams
  [0x268a, 0x268f], // digrams
  [0x2e80, 0x303e], // CJK radicals, Kangxi, ideographic description, CJK symbols and punctuation (3000 is F)
  [0x3041, 0x3247], // Hiragana, Katakana, Bopomofo, Hangul compatibility Jamo, Kanbun, CJK strokes, enclosed
  [0x3250, 0x4dff], // enclosed and compatibility, CJK Extension A, Yijing hexagrams
  [0x4e00, 0x9fff], // CJK Unified Ideographs
  [0xa000, 0xa4cf], // Yi syllables and radicals
  [0xa960, 0xa97f], // Hangul Jamo Extended-A
  [0xac00, 0xd7a3], // Hangul syllables
  [0xf900, 0xfaff], // CJK compatibility ideographs
  [0xfe10, 0xfe19], // vertical forms
  [0xfe30, 0xfe6f], // CJK compatibility forms, small form variants
  [0xff00, 0xff60], // fullwidth forms
  [0xffe0, 0xffe6], // fullwidth signs
  [0x16fe0, 0x16fe4], // ideographic symbols
  [0x16ff0, 0x16ff6],
  [0x17000, 0x18cff], // Tangut, Khitan
  [0x18d00, 0x18d1e],
  [0x18d80, 0x18df2], // Tangut components supplement
  [0x1aff0, 0x1b2ff], // Kana extended and supplement, Nushu
  [0x1d300, 0x1d376], // Tai Xuan Jing symbols, counting rods
  [0x1f200, 0x1f202], // enclosed ideographic supplement
  [0x1f210, 0x1f23b],
  [0x1f240, 0x1f248],
  [0x1f250, 0x1f251],
  [0x1f260, 0x1f265],
  [0x20000, 0x2fffd], // CJK Unified Ideographs Extensions B-F, compatibility supplement
  [0x30000, 0x3fffd], // Extensions G-H
];

function isWide(codePoint: number): boolean {
  if (codePoint < 0x1100) return false;
  let low = 0;
  let high = WIDE.length - 1;
  while (low <= high) {
    const middle = (low + high) >> 1;
    const [first, last] = WIDE[middle]!;
    if (codePoint < first) high = middle - 1;
    else if (codePoint > last) low = middle + 1;
    else return true;
  }
  return false;
}

/** The columns of one grapheme: 0, 1 or 2. */
function graphemeColumns(grapheme: string): number {
  const start = grapheme.search(VISIBLE);
  if (start === -1) return 0;
  if (isEmojiSequence(grapheme)) return 2;
  const base = grapheme.slice(start);
  return EMOJI_PRESENTATION.test(base) || isWide(base.codePointAt(0)!) ? 2 : 1;
}

/** The terminal columns `text` takes (of one line: a control counts as none). */
export function columnsOf(text: string): number {
  if (PRINTABLE_ASCII.test(text)) return text.length;
  let columns = 0;
  for (const { segment } of segmenter.segment(text)) columns += graphemeColumns(segment);
  return columns;
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
