/** jsonSlices: the text JSON.stringify gives, in slices with a turn of the event loop between them. */
import assert from 'node:assert/strict';
import test from 'node:test';
import { JsonText, jsonSlices, objectOf, objectSlices, type StreamedMember } from '../../src/core/json-slices.ts';

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

/** Members of every kind: values (some without text), and paged entries with empty, short and long pages. */
function trickyMembers(reads: string[] = []): StreamedMember[] {
  const pages = (name: string, list: unknown[][]) => async function* () {
    for (const [index, page] of list.entries()) {
      reads.push(`${name} page ${index}`);
      yield page;
    }
  };
  return [
    { key: 'format', value: () => 'svc.test' },
    { key: 'skipped', value: () => undefined },
    { key: 'tricky', value: async () => tricky },
    { key: 'empty', pages: pages('empty', []) },
    { key: 'emptyPages', pages: pages('emptyPages', [[], []]) },
    { key: 'records', pages: pages('records', [[tricky, undefined, 1], [], [{ toJSON: (key: string) => `entry ${key}` }, 'x"\u2028', null], [[[[]]], { a: { b: { c: { d: [1] } } } }]]) },
    { key: 'when', value: () => new Date(Date.UTC(2026, 10, 27)) },
    { key: 'withToJson', value: () => ({ toJSON: (key: string) => `member ${key}` }) },
    { key: 'fn', value: () => () => 1 },
    { key: 'nothing', value: () => null },
  ];
}

test('objectSlices: the text is JSON.stringify\'s of objectOf the same members, at every slice size and depth', async () => {
  const expected = JSON.stringify(await objectOf(trickyMembers()));
  for (const sliceChars of [1, 7, 64 * 1024]) {
    for (const depth of [0, 1, 2, 3, 6]) {
      const slices: string[] = [];
      for await (const slice of objectSlices(trickyMembers(), { sliceChars, depth, turn: async () => undefined })) slices.push(slice);
      assert.equal(slices.join(''), expected, `sliceChars ${sliceChars} depth ${depth}`);
    }
  }
  const none: string[] = [];
  for await (const slice of objectSlices([{ key: 'a', value: () => undefined }])) none.push(slice);
  assert.equal(none.join(''), '{}');
});

test('objectSlices reads a page only when the text reaches it, and a slice goes out before the next page is read', async () => {
  const reads: string[] = [];
  const big = Array.from({ length: 10 }, (_, i) => ({ i, pad: 'x'.repeat(1000) }));
  const members: StreamedMember[] = [
    { key: 'head', value: () => 'h' },
    { key: 'records', pages: async function* () {
      for (let page = 0; page < 3; page++) {
        reads.push(`page ${page}`);
        yield big;
      }
    } },
  ];
  const seen: string[] = [];
  for await (const slice of objectSlices(members, { sliceChars: 4096, turn: async () => undefined })) seen.push(`slice after ${reads.at(-1)}`);
  // Each page (10 KiB) is written in slices of 4 KiB before the next page is read.
  assert.ok(seen.includes('slice after page 0'), seen.join(', '));
  assert.ok(seen.includes('slice after page 1'), seen.join(', '));
  assert.deepEqual(reads, ['page 0', 'page 1', 'page 2']);
});

test('objectSlices: an error reading a member ends the text where it is, after the slices written', async () => {
  const members: StreamedMember[] = [
    { key: 'head', value: () => 'x'.repeat(100) },
    { key: 'records', pages: async function* () {
      yield [1, 2];
      throw new Error('read failed');
    } },
  ];
  const slices: string[] = [];
  await assert.rejects(async () => {
    for await (const slice of objectSlices(members, { sliceChars: 10, turn: async () => undefined })) slices.push(slice);
  }, /read failed/);
  assert.ok(slices.join('').startsWith('{"head":"xxx'));
  assert.ok(!slices.join('').endsWith('}'));
});

test('JsonText is spliced as it is, unparsed, where JSON.stringify writes its parsed value: the same text', async () => {
  // Stored as JSON.stringify wrote it; an emoji (a surrogate pair) straddles every piece boundary somewhere.
  const stored = { '2': 'integer-like key first', b: `"q" \u2028 \u0000 ${'\u{1F600}'.repeat(20_000)} \ud800`, n: [1e21, -0, 0.1, 5e-324], nested: { a: [{}] } };
  const spliced = new JsonText(JSON.stringify(stored));
  const value = { before: 1, request: spliced, list: [spliced], after: 'x' };
  const expected = JSON.stringify(value);
  assert.equal(expected, JSON.stringify({ before: 1, request: stored, list: [stored], after: 'x' }));
  const parse = JSON.parse;
  let parsed = 0;
  JSON.parse = ((text: string, reviver?: never) => {
    parsed += 1;
    return parse(text, reviver);
  }) as typeof JSON.parse;
  try {
    for (const sliceChars of [1, 1000, 64 * 1024]) {
      const { text, slices } = await textOf(value, { sliceChars });
      assert.equal(text, expected, `sliceChars ${sliceChars}`);
      // No slice ends between the halves of a pair: each is encoded to UTF-8 on its own.
      assert.equal(Buffer.concat(slices.map((slice) => Buffer.from(slice))).toString(), expected);
      const members: StreamedMember[] = [{ key: 'request', value: () => spliced }, { key: 'list', pages: async function* () { yield [spliced]; } }];
      const streamed: string[] = [];
      for await (const slice of objectSlices(members, { sliceChars, turn: async () => undefined })) streamed.push(slice);
      assert.equal(Buffer.concat(streamed.map((slice) => Buffer.from(slice))).toString(), JSON.stringify({ request: stored, list: [stored] }));
    }
  } finally {
    JSON.parse = parse;
  }
  assert.equal(parsed, 0);
});
