/** jsonSlices: the text JSON.stringify gives, in slices with a turn of the event loop between them. */
import assert from 'node:assert/strict';
import test from 'node:test';
import { jsonSlices } from '../../src/core/json-slices.ts';

async function textOf(value: unknown, options: Parameters<typeof jsonSlices>[1] = {}): Promise<{ text: string | undefined; slices: string[]; turns: number }> {
  let turns = 0;
  const slices: string[] = [];
  for await (const slice of jsonSlices(value, { ...options, turn: async () => void turns++ })) slices.push(slice);
  return { text: slices.length > 0 ? slices.join('') : undefined, slices, turns };
}

const tricky = {
  b: 1,
  a: [1, undefined, () => 1, Symbol('s'), null, 'x"\n\u2028\ud800'],
  skipped: undefined,
  fn: () => 2,
  '2': 'integer-like key',
  when: new Date(Date.UTC(2026, 10, 27)),
  withToJson: { toJSON: (key: string) => `key ${key}` },
  boxed: [new String('s'), new Number(3), new Boolean(false)],
  map: new Map([[1, 2]]),
  nested: { deeper: { deepest: { bottom: [{ k: [1, { v: '\u00e9' }] }] } } },
  empty: { o: {}, a: [] },
  nullProto: Object.assign(Object.create(null), { z: 1 }),
  numbers: [0, -0, 1e21, 1.5, NaN, Infinity],
  '': 'empty key',
  'quote"key': true,
};

test('the text is JSON.stringify\'s, character for character, at every slice size and depth', async () => {
  for (const value of [tricky, [tricky, tricky], 'a string', 42, null, true, [], {}, [[[]]], { a: { b: {} } }]) {
    const expected = JSON.stringify(value);
    for (const sliceChars of [1, 7, 64 * 1024]) {
      for (const depth of [0, 1, 2, 6]) {
        assert.equal((await textOf(value, { sliceChars, depth })).text, expected, `${expected.slice(0, 40)} sliceChars ${sliceChars} depth ${depth}`);
      }
    }
  }
});

test('values without JSON text have no slices, as JSON.stringify answers undefined', async () => {
  for (const value of [undefined, () => 1, Symbol('s')]) assert.equal((await textOf(value)).text, undefined);
});

test('a large value comes in slices of about sliceChars, a turn of the event loop between two', async () => {
  const records = Array.from({ length: 2000 }, (_, i) => ({ seq: i + 1, payload: { pad: 'x'.repeat(500) } }));
  const { text, slices, turns } = await textOf({ format: 'packet', records }, { sliceChars: 16 * 1024 });
  assert.equal(text, JSON.stringify({ format: 'packet', records }));
  assert.ok(slices.length > 50, `${slices.length} slices`);
  assert.equal(turns, slices.length - 1);
  for (const slice of slices.slice(0, -1)) assert.ok(slice.length >= 16 * 1024 && slice.length < 17 * 1024, `a slice of ${slice.length}`);
});

test('what JSON.stringify refuses is refused: a BigInt, a cycle', async () => {
  await assert.rejects(textOf({ a: [1n] }), TypeError);
  const cycle: Record<string, unknown> = {};
  cycle.self = { back: cycle };
  await assert.rejects(textOf(cycle), /circular|Maximum call stack/i);
});
