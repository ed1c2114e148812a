/**
 * Declared tool schemas (src/gateway/tool-schemas.ts): what one tenant's schema leaves behind in the one ajv every
 * tenant shares (nothing), and how large a request's schemas may be.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import { compileTools, MAX_REQUEST_SCHEMA_NODES, MAX_SCHEMA_NODES } from '../../src/gateway/tool-schemas.ts';
import { build, json } from '../support/build.ts';

const tool = (name: string, parameters: Record<string, unknown>) => ({ type: 'function' as const, function: { name, parameters } });

/** An object schema of `properties` string properties: 1 + 2 + 2 per property nodes (itself, type, properties, each). */
function wide(properties: number, salt = ''): Record<string, unknown> {
  const props: Record<string, unknown> = {};
  for (let i = 0; i < properties; i++) props[`p${i}${salt}`] = { type: 'string' };
  return { type: 'object', properties: props };
}

test("a schema's $id is not registered: another schema can neither $ref it nor is refused for reusing it", () => {
  const secret = { $id: 'urn:probe:tenant-a', type: 'object', properties: { secretField: { type: 'string' } } };
  compileTools([tool('a', secret)]);
  for (const ref of ['urn:probe:tenant-a', 'urn:probe:tenant-a#/properties/secretField']) {
    assert.throws(() => compileTools([tool('b', { type: 'object', properties: { x: { $ref: ref } } })]), /not a valid JSON Schema/, ref);
  }
  // The same $id with other content compiles: nothing of the first one is kept under it.
  const again = compileTools([tool('c', { $id: 'urn:probe:tenant-a', type: 'object', properties: { other: { type: 'number' } } })]);
  assert.equal(again.check({ id: '1', type: 'function', function: { name: 'c', arguments: '{"other": 1}' } }, 0), null);
  assert.notEqual(again.check({ id: '1', type: 'function', function: { name: 'c', arguments: '{"other": "x"}' } }, 0), null);
  // A $ref inside one schema to its own $id still resolves.
  const local = compileTools([tool('d', { $id: 'urn:probe:local', type: 'object', properties: { x: { $ref: 'urn:probe:local#/$defs/n' } }, $defs: { n: { type: 'number' } } })]);
  assert.notEqual(local.check({ id: '1', type: 'function', function: { name: 'd', arguments: '{"x": "y"}' } }, 0), null);
});

test('a schema of more than 2,000 nodes, or schemas of more than 16,000 together, are refused before they are compiled', () => {
  const properties = Math.floor((MAX_SCHEMA_NODES - 3) / 2);
  assert.doesNotThrow(() => compileTools([tool('fits', wide(properties))]));
  assert.throws(() => compileTools([tool('big', wide(properties + 1))]), /tools\[0\]\.function\.parameters is too large: a schema may have at most 2000 nodes/);
  const each = Math.floor(MAX_REQUEST_SCHEMA_NODES / (2 * properties + 3));
  const many = Array.from({ length: each + 1 }, (_, i) => tool(`t${i}`, wide(properties, `_${i}`)));
  assert.doesNotThrow(() => compileTools(many.slice(0, each)));
  assert.throws(() => compileTools(many), /together they may have at most 16000 nodes/);
});

test('through the wires: a tool schema too large is a 400 naming it, on chat, responses and messages alike', async (t) => {
  const { app } = await build(t);
  const huge = wide(MAX_SCHEMA_NODES);
  const answers = await Promise.all([
    app.inject({ method: 'POST', url: '/v1/chat/completions', payload: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }], tools: [tool('t', huge)] } }),
    app.inject({ method: 'POST', url: '/v1/responses', payload: { model: 'gpt-4o-mini', input: 'x', tools: [{ type: 'function', name: 't', parameters: huge }] } }),
    app.inject({ method: 'POST', url: '/v1/messages', payload: { model: 'claude-sonnet-4', max_tokens: 10, messages: [{ role: 'user', content: 'x' }], tools: [{ name: 't', input_schema: huge }] } }),
  ]);
  for (const answer of answers) {
    assert.equal(answer.statusCode, 400, answer.body);
    assert.match(JSON.stringify(json(answer)), /too large/);
  }
});
