/**
 * The character rules of text svc stores (src/core/text.ts), pinned code point by code point: what text fields refuse
 * (settings, e-mail addresses, the names people give things), and what a name a run is listed by refuses beside it
 * (src/evidence/model-field.ts; the gateway's answers are in test/api/limits.test.ts).
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import { isPrintableAndVisible, isPrintableText } from '../../src/core/text.ts';

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
const BMP = range(0, 0xffff).filter((code) => code < 0xd800 || code > 0xdfff);
const INVISIBLE = /\p{Default_Ignorable_Code_Point}/u;

test('text refuses the controls, the line and paragraph separators and the bidirectional overrides and isolates, nothing else', () => {
  const refused = BMP.filter((code) => !isPrintableText(`a${String.fromCharCode(code)}b`));
  assert.deepEqual(refused, [...range(0x00, 0x1f), ...range(0x7f, 0x9f), 0x2028, 0x2029, ...range(0x202a, 0x202e), ...range(0x2066, 0x2069)]);
});

test("a run's name refuses what text refuses and every character that shows nothing; other Unicode is a name like any", () => {
  for (const code of BMP) {
    const char = String.fromCharCode(code);
    assert.equal(isPrintableAndVisible(`a${char}b`), isPrintableText(`a${char}b`) && !INVISIBLE.test(char), `U+${code.toString(16)}`);
  }
  // The ones a name was read wrongly by: a line separator, a zero-width space, a BOM, a right-to-left mark, a word
  // joiner, a variation selector; and beyond the BMP, a tag character.
  for (const name of ['gpt-4o\u2028mini', 'gpt\u2029-4o', 'gpt\u200b-4o', 'gpt-4o\ufeff', 'gpt\u200f-4o', 'gpt\u2060-4o', 'gpt-4o\ufe0f', 'gpt-4o\u{e0041}']) {
    assert.equal(isPrintableAndVisible(name), false, JSON.stringify(name));
  }
  for (const name of ['gpt-4o-mini', 'modèle-é', 'claude-3.5 (sonnet)', '名前/🙂']) assert.equal(isPrintableAndVisible(name), true, name);
});
