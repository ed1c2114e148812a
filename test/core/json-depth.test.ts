/** The nesting bound of JSON from outside (src/core/json-depth.ts); the HTTP answers are in test/api/limits.test.ts. */
import assert from 'node:assert/strict';
import test from 'node:test';
import { nestsDeeperThan } from '../../src/core/json-depth.ts';

test('nestsDeeperThan counts levels of objects and arrays, the outermost as level 1', () => {
  for (const scalar of [null, 1, 'text', true]) assert.equal(nestsDeeperThan(scalar, 0), false);
  assert.equal(nestsDeeperThan({}, 1), false);
  assert.equal(nestsDeeperThan({}, 0), true);
  assert.equal(nestsDeeperThan({ a: [{ b: 1 }] }, 3), false);
  assert.equal(nestsDeeperThan({ a: [{ b: 1 }] }, 2), true);
  // Only the deepest branch counts, however wide the value is.
  const wide = { items: Array.from({ length: 1000 }, (_, i) => ({ i, tags: ['x'] })), deep: { a: { b: { c: {} } } } };
  assert.equal(nestsDeeperThan(wide, 5), false);
  assert.equal(nestsDeeperThan(wide, 4), true);
});

test('nestsDeeperThan walks a value far deeper than the stack allows without recursion', () => {
  const deep = JSON.parse(`${'['.repeat(200_000)}${']'.repeat(200_000)}`);
  assert.equal(nestsDeeperThan(deep, 128), true);
  assert.equal(nestsDeeperThan(deep, 200_000), false);
});
