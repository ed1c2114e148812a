import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { test } from 'node:test';
import { Tiktoken, type TiktokenBPE } from 'js-tiktoken/lite';
import { createBpeEncoder } from '../../src/gateway/tokens-bpe.ts';

const ranks = createRequire(import.meta.url)('js-tiktoken/ranks/o200k_base') as TiktokenBPE;

/** Deterministic text drawn from `alphabet` (a seeded linear congruential generator, so a failure reproduces). */
function drawn(alphabet: readonly string[], length: number, seed: number): string {
  let text = '';
  let state = seed;
  for (let i = 0; i < length; i++) {
    state = (state * 1103515245 + 12345) & 0x7fffffff;
    text += alphabet[state % alphabet.length];
  }
  return text;
}

// Every kind of piece the o200k pre-tokeniser makes: words with contractions and marks, digits, punctuation with
// trailing newlines or slashes, whitespace of several kinds, CJK, emoji with joiners, lone surrogates.
const ALPHABET = [
  ...'abc XYZ 123 \t\n\r.,;:!?\'"-_/\\()[]{}<>=+*&^%$#@~`|',
  'é', 'ü', 'ß', 'Ж', 'ω', '中', '文', '日本', '한국', '\u0301', '\u200d', '😀', '👨‍👩‍👧', '\u3000', '\u00a0', '\u2028',
  "'s", "'LL", '\r\n', '  ', '\n\n', '\ud800', '\udfff',
];
const RUN_UNITS = [' ', '\n', '\t', '\u3000', '\u00a0', '.', '=', '7', 'a', 'A', '中', '\u0301', '😀', '\r\n', '\n\n\n ', '\n/'];

test('encodes and decodes exactly as js-tiktoken does, for pieces of every shape and runs of every kind', () => {
  const reference = new Tiktoken(ranks);
  const encoder = createBpeEncoder(ranks);
  const texts = ['', 'Hello world, this is a test', '<|endoftext|> is text here', "They'RE 3.14159 ok?!\n\n  done"];
  for (let seed = 1; seed <= 150; seed++) texts.push(drawn(ALPHABET, 20 + ((seed * 37) % 300), seed));
  // Runs up to 200 units: long enough to need thousands of merges, short enough for js-tiktoken's quadratic merge.
  for (const unit of RUN_UNITS) {
    for (const length of [1, 2, 3, 63, 64, 65, 129, 200]) {
      const run = unit.repeat(length);
      texts.push(run, `x${run}y`, `Hello ${run} world.`);
    }
  }
  for (const text of texts) {
    const expected = reference.encode(text, [], []);
    const ids = encoder.encode(text);
    assert.deepEqual(ids, expected, JSON.stringify(text.slice(0, 60)));
    assert.equal(encoder.decode(ids), reference.decode(expected));
  }
});

// Texts of long pieces, too long for js-tiktoken's quadratic merge, each encoded once by this encoder before the
// joined-ranks table (ids summed as h = h * 31 + id, 32-bit): the table must change no id, whatever shape it is asked for.
const WORDS = ['the', 'quick', 'brown', 'fox', 'jumps', 'over', 'lazy', 'dog', 'Gateway', "isn't", 'tokens', ',', '.', '\n', '  ', '3.14', 'naïve', 'Straße'];
const CODE = ['const', ' x', ' =', ' map', '.get(', 'id', ')', ' ??', ' 0', ';\n', '  ', 'return', ' {', '}', '=>', '//', ' TODO', '\t', '[i]', '"str"'];
const IDEOGRAPHS = [...'的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可里后小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前所本见经头面公同三已老从动两长知民样现分将外但身些与高意进把法此实回二理美点月明'];
const MIXED = [...'abc XYZ 123 \t\n\r.,;:!?\'"-_/\\()[]{}<>=+*&^%$#@~`|', 'é', 'Ж', '中', '日本', '한국', '\u0301', '\u200d', '😀', '👨‍👩‍👧', '\u3000', '\u00a0', '\r\n', '  ', '\n\n'];
const RECORDED: ReadonlyArray<[string, () => string, number, number]> = [
  ['prose', () => drawn(WORDS.map((word) => (word.length > 2 ? ` ${word}` : word)), 40_000, 1), 43482, 1012014957],
  ['code', () => drawn(CODE, 40_000, 2), 54405, -549230503],
  ['mixed', () => drawn(MIXED, 60_000, 3), 54543, -1279075390],
  ['ideographs without punctuation', () => drawn(IDEOGRAPHS, 60_000, 4), 58019, 623018522],
  ['letters without spaces', () => drawn([...'abcdefghijklmnopqrstuvwxyz'], 60_000, 5), 30124, 1970908718],
  ['emoji', () => drawn(['😀', '👍', '🎉', '👨‍👩‍👧', '🇫🇷', '\u200d'], 30_000, 6), 70386, -355027533],
  ['whitespace runs', () => drawn([' ', ' ', ' ', '\n', '\t', '\u3000', '\r\n'], 60_000, 7), 26474, -564999477],
  ['spaces', () => ' '.repeat(100_000), 782, 1135670341],
  ['dots and digits', () => drawn(['.', '.', '.', '7', '=', '-'], 60_000, 8), 23231, 406262738],
];

test('long pieces of every shape encode to the ids recorded before the joined-ranks table', () => {
  const encoder = createBpeEncoder(ranks);
  for (const [shape, text, count, sum] of RECORDED) {
    const ids = encoder.encode(text());
    let checksum = 0;
    for (const id of ids) checksum = (Math.imul(checksum, 31) + id) | 0;
    assert.deepEqual([ids.length, checksum], [count, sum], shape);
  }
});

test('decode joins the bytes of the ids, skips unknown ids and shows a cut character as U+FFFD', () => {
  const encoder = createBpeEncoder(ranks);
  const ids = encoder.encode('round trip ✓ ünïcode 👨‍👩‍👧');
  assert.equal(encoder.decode(ids), 'round trip ✓ ünïcode 👨‍👩‍👧');
  assert.equal(encoder.decode([...encoder.encode('a'), -1, 10 ** 9]), 'a');
  const rare = encoder.encode('𓀀'); // four bytes, no token for any two of them together
  assert.equal(rare.length, 4);
  assert.equal(encoder.decode(rare.slice(0, 1)), '\uFFFD');
});
