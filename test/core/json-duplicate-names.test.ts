import assert from 'node:assert/strict';
import test from 'node:test';
import { duplicateNamePath } from '../../src/core/json-duplicate-names.ts';

test('finds a name held twice by one object, at its path, as its escapes decode', () => {
  assert.deepEqual(duplicateNamePath('{"a":1,"a":2}'), ['a']);
  assert.deepEqual(duplicateNamePath('{"a":{"a":1},"a":2}'), ['a']);
  assert.deepEqual(duplicateNamePath('{"v":[{"x":1},{"y":[0,{"k":1,"k":2}]}]}'), ['v', 1, 'y', 1, 'k']);
  assert.deepEqual(duplicateNamePath('[{"n":1},{"n":1,"\\u006e":2}]'), [1, 'n']);
  assert.deepEqual(duplicateNamePath('{"":1,"":2}'), ['']);
});

test('passes one name in sibling and nested objects, and quotes, braces and backslashes inside strings', () => {
  assert.equal(duplicateNamePath('{"a":{"a":{"a":1}},"b":[{"a":1},{"a":2}]}'), null);
  assert.equal(duplicateNamePath('{"a":"a","b":"\\"a\\":{","c":"\\\\","d":"x\\\\\\"y","e":"}]","f":["a","a"]}'), null);
  assert.equal(duplicateNamePath('{"x\\\\":1,"x":2}'), null);
  assert.equal(duplicateNamePath('\ufeff{"a":1}'), null);
  assert.equal(duplicateNamePath('"a"'), null);
  assert.equal(duplicateNamePath('[1,"a",{"a":1}]'), null);
});
