/**
 * Keys typed faster than the view reads them (a held `j`, type-ahead, a slow SSH link) reach it as one chunk of
 * text, which Ink passes to `useInput` as one input (`jj`, `j\r`): compared with `'j'`, none of them would act.
 * `keysOf` splits such a chunk back into its keys.
 */
import type { Key } from 'ink';

const CTRL_C = '\u0003';

/** The key each character of a chunk stands for: Enter, Tab, Backspace and Ctrl-C are characters too. */
function keyOf(character: string, chunk: Key): [string, Key] {
  if (character === CTRL_C) return ['c', { ...chunk, ctrl: true }];
  return [
    character,
    { ...chunk, return: character === '\r', tab: character === '\t', backspace: character === '\u007f' || character === '\b' },
  ];
}

/** The keys of one input: itself, unless it is several plain characters (never an escape sequence, Ink splits those). */
export function keysOf(input: string, key: Key): Array<[string, Key]> {
  const characters = Array.from(input);
  if (characters.length <= 1 || key.ctrl || key.meta) return [[input, key]];
  return characters.map((character) => keyOf(character, key));
}
