/**
 * canonicalJson feeds hash chains stored in users' data files: its output must never change. The reference below is
 * the original definition, verbatim; the fast one must agree with it byte for byte on every input.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import { canonicalJson, chainHash } from '../../src/core/canonical-json.ts';
import { sha256Hex } from '../../src/core/ids.ts';

function referenceCanonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    if (typeof value === 'number' && !Number.isFinite(value)) return 'null';
    return JSON.stringify(value) ?? 'null';
  }
  if (Array.isArray(value)) return `[${value.map(referenceCanonicalJson).join(',')}]`;
  const entries = Object.keys(value as Record<string, unknown>)
    .filter((key) => (value as Record<string, unknown>)[key] !== undefined)
    .sort()
    .map((key) => `${JSON.stringify(key)}:${referenceCanonicalJson((value as Record<string, unknown>)[key])}`);
  return `{${entries.join(',')}}`;
}

/** A small deterministic PRNG (mulberry32), so a failure is reproducible from its seed. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const STRING_PIECES = [
  '',
  'a',
  'role',
  'content',
  'Hello, world',
  'quote " and backslash \\',
  'line\nbreak\ttab\r',
  '\u0000\u0001\u001f\u007f',
  'caf\u00e9 \u00fc\u00df',
  '\u4f60\u597d',
  '\ud83d\ude00 emoji',
  'lone \ud800 high',
  'lone \udfff low',
  '\u2028\u2029',
  '</script>',
  '10',
  '2',
  '-1',
  '__proto__x',
  'Z',
  '_',
];

const NUMBERS = [0, -0, 1, -1, 1.5, 1e21, 1e-7, 123456789012345680000, Number.MAX_SAFE_INTEGER, Number.MIN_VALUE, NaN, Infinity, -Infinity, 0.1 + 0.2];

class Point {
  x = 1;
  y: number | undefined = undefined;
  constructor(public label: string) {}
  get area(): number {
    return 0;
  }
}

function randomString(next: () => number): string {
  const count = Math.floor(next() * 3);
  let out = '';
  for (let i = 0; i < count; i += 1) out += STRING_PIECES[Math.floor(next() * STRING_PIECES.length)];
  return out;
}

function randomValue(next: () => number, depth: number): unknown {
  const pick = next();
  if (depth <= 0 || pick < 0.45) {
    const kind = Math.floor(next() * 9);
    switch (kind) {
      case 0:
        return null;
      case 1:
        return undefined;
      case 2:
        return next() < 0.5;
      case 3:
        return NUMBERS[Math.floor(next() * NUMBERS.length)];
      case 4:
        return (next() - 0.5) * 10 ** Math.floor(next() * 30 - 10);
      case 5:
        return () => 1;
      case 6:
        return Symbol('s');
      default:
        return randomString(next);
    }
  }
  if (pick < 0.7) {
    const length = Math.floor(next() * 6);
    const array: unknown[] = [];
    for (let i = 0; i < length; i += 1) array.push(randomValue(next, depth - 1));
    if (next() < 0.1) array[length + 2] = 'after a hole';
    return array;
  }
  if (pick < 0.75) {
    const special = Math.floor(next() * 6);
    if (special === 0) return new Date(1_700_000_000_000);
    if (special === 1) return new Point(randomString(next));
    if (special === 2) return new Map([['a', 1]]);
    if (special === 3) return new Uint8Array([1, 2, 3, 10, 11]);
    if (special === 4) return Object.create(null, { b: { value: 1, enumerable: true }, a: { value: 2, enumerable: true } });
    return new String('ab');
  }
  const size = Math.floor(next() * 7);
  const object: Record<string, unknown> = {};
  for (let i = 0; i < size; i += 1) object[randomString(next)] = randomValue(next, depth - 1);
  if (next() < 0.2) object[String(Math.floor(next() * 20))] = randomValue(next, depth - 1);
  return object;
}

test('canonicalJson equals the original definition on hand-picked values', () => {
  const values: unknown[] = [
    null,
    undefined,
    true,
    false,
    ...NUMBERS,
    ...STRING_PIECES,
    [],
    {},
    [undefined, null, NaN, () => 1],
    // eslint-disable-next-line no-sparse-arrays
    [, 1, , 2],
    { b: 1, a: undefined, c: [1, { z: 1, y: { x: [] } }] },
    { '10': 1, '2': 2, a: 3, A: 4, _: 5, '\u00e9': 6, '\ud83d\ude00': 7, '\uffff': 8 },
    { [Symbol('hidden')]: 1, shown: 2 },
    new Date(0),
    new Point('p'),
    new Set([1]),
    new Float64Array([1.5, -0]),
    new Number(3),
    new Boolean(false),
    { nested: { deeper: { deepest: [[[['x']]]] } } },
    { messages: [{ role: 'user', content: 'hi' }], model: 'gpt-4o-mini', temperature: 0 },
  ];
  for (const value of values) assert.equal(canonicalJson(value), referenceCanonicalJson(value), String(referenceCanonicalJson(value)));
});

test('canonicalJson equals the original definition on 20,000 generated values', () => {
  for (let seed = 1; seed <= 20_000; seed += 1) {
    const value = randomValue(prng(seed), 5);
    const expected = referenceCanonicalJson(value);
    assert.equal(canonicalJson(value), expected, `seed ${seed}`);
  }
});

test('canonicalJson keeps the original failures and the chain hash', () => {
  assert.throws(() => referenceCanonicalJson(1n));
  assert.throws(() => canonicalJson(1n));
  assert.throws(() => canonicalJson({ a: [1n] }));
  const event = { type: 'run.started', at: 1, data: { b: 'x', a: [1, 'é'] } };
  assert.equal(chainHash('prev', event), sha256Hex(`prev${referenceCanonicalJson(event)}`));
});

test('the quoted-key memo is bounded and never changes a result', () => {
  for (let i = 0; i < 10_000; i += 1) {
    const value = { [`key-${i}`]: i, [`${'long'.repeat(40)}${i}`]: i };
    assert.equal(canonicalJson(value), referenceCanonicalJson(value));
  }
});

test('objects with more keys than the insertion sort takes, and every size up to it, sort as the original did', () => {
  const next = prng(7);
  for (let size = 0; size <= 60; size += 1) {
    for (let round = 0; round < 20; round += 1) {
      const value: Record<string, unknown> = {};
      for (let i = 0; i < size; i += 1) value[`${randomString(next)}${i % 3 === 0 ? i : ''}`] = i;
      assert.equal(canonicalJson(value), referenceCanonicalJson(value), `size ${size}, round ${round}`);
    }
  }
  // A hostile body's object of many keys takes V8's sort (n log n), not the quadratic insertion sort.
  const many: Record<string, number> = {};
  for (let i = 100_000; i > 0; i -= 1) many[`k${i}`] = i;
  assert.equal(canonicalJson(many), referenceCanonicalJson(many));
});
