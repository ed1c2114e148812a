/**
 * The one rule for text shown where it could act (src/core/terminal-escapes.ts), pinned code point by code point: the
 * CLI (test/cli/terminal-text.test.ts), the client's error messages (test/client/built-client.test.ts) and the log
 * (test/http/log-terminal.test.ts) are each tested through the real thing, and all three go through these functions.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import { escapedKeepingLines, escapedToOneLine, terminalSafeJson } from '../../src/core/terminal-escapes.ts';

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
const C0 = range(0x00, 0x1f);
const DEL_AND_C1 = range(0x7f, 0x9f);
/** Bidirectional marks (ALM, LRM, RLM), overrides and embeddings, isolates; the line and paragraph separators. */
const REORDER_OR_BREAK = [0x061c, 0x200e, 0x200f, ...range(0x202a, 0x202e), ...range(0x2066, 0x2069), 0x2028, 0x2029];

/** The code points of the Basic Multilingual Plane (every unsafe one is there) that `escape` changes. */
function escapedBy(escape: (text: string) => string): number[] {
  return range(0, 0xffff).filter((code) => {
    const char = String.fromCharCode(code);
    const shown = escape(char);
    if (shown === char) return false;
    assert.equal(shown, `\\u${code.toString(16).padStart(4, '0')}`, `U+${code.toString(16)} is written as its \\u escape`);
    return true;
  });
}

test('one line: every control (C0, DEL, C1) and every invisible character that reorders or breaks lines, nothing else', () => {
  assert.deepEqual(escapedBy(escapedToOneLine), [...C0, ...DEL_AND_C1, ...REORDER_OR_BREAK].sort((a, b) => a - b));
});

test('text that may span lines keeps tab and line feed; JSON text keeps the C0 controls (JSON escapes them in its strings)', () => {
  const butTabAndLineFeed = C0.filter((code) => code !== 0x09 && code !== 0x0a);
  assert.deepEqual(escapedBy(escapedKeepingLines), [...butTabAndLineFeed, ...DEL_AND_C1, ...REORDER_OR_BREAK].sort((a, b) => a - b));
  assert.deepEqual(escapedBy(terminalSafeJson), [...DEL_AND_C1, ...REORDER_OR_BREAK].sort((a, b) => a - b));
  const value = { name: 'a\u009b2J\u202eb\u2028c', lines: 'x\ny' };
  const json = terminalSafeJson(JSON.stringify(value, null, 2));
  assert.match(json, /"a\\u009b2J\\u202eb\\u2028c"/);
  assert.deepEqual(JSON.parse(json), value, 'the same JSON value');
});

test('characters that show nothing but move nothing are shown as they are: emoji sequences, Persian, a soft hyphen', () => {
  // A family joined by U+200D, a heart styled by U+FE0F, a word joined by U+200C, a zero-width space, a BOM.
  for (const text of ['👨\u200d👩\u200d👧', '❤\ufe0f', 'می\u200cخواهم', 'co\u00adoperate', 'a\u200bb', '\ufeffx', 'Zoë Ωmega 名前 🙂']) {
    assert.equal(escapedToOneLine(text), text);
    assert.equal(escapedKeepingLines(text), text);
    assert.equal(terminalSafeJson(JSON.stringify(text)), JSON.stringify(text));
  }
  // A lone surrogate is no character of the rule: left as it is, not broken into something else.
  assert.equal(escapedToOneLine('a\ud800b\u001b'), 'a\ud800b\\u001b');
});
