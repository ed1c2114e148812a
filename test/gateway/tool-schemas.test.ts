/**
 * Declared tool schemas (src/gateway/tool-schemas.ts): what one tenant's schema leaves behind in the one ajv every
 * tenant shares (nothing), and how large a request's schemas may be.
 */
import assert from 'node:assert/strict';
import test, { type TestContext } from 'node:test';
import { compileTools, MAX_REQUEST_SCHEMA_NODES, MAX_SCHEMA_NODES } from '../../src/gateway/tool-schemas.ts';
import { build, json } from '../support/build.ts';
import { contentChunk, messageEvents, sendChunks, sendJson, startFakeUpstream, startSse } from '../support/fake-upstream.ts';
import { openaiGateway } from '../support/openai-gateway.ts';

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

test("a schema's anchors are not registered either: another schema's $ref to an anchor of the same name that it does not declare is a 400, not resolved through the first one's (ajv kept every anchor under the base of schemas without an $id)", async (t) => {
  const { app } = await build(t);
  const ask = (parameters: Record<string, unknown>) =>
    app.inject({ method: 'POST', url: '/v1/chat/completions', payload: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }], tools: [tool('t', parameters)] } });
  const anchored = await ask({ type: 'object', properties: { n: { $ref: '#node' } }, definitions: { node: { $id: '#node', type: 'integer' } } });
  assert.equal(anchored.statusCode, 200, anchored.body);
  const unanchored = await ask({ type: 'object', properties: { n: { $ref: '#node' } }, definitions: { node: { type: 'string' } } });
  assert.equal(unanchored.statusCode, 400, unanchored.body);
  assert.equal(json(unanchored).error.message, "tools[0].function.parameters is not a valid JSON Schema: can't resolve reference #node from id #");
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

test("through the wires: a tool schema refused is named as the request's wire wrote it (tools[i].parameters, tools[i].input_schema), not as svc's chat translation of it", async (t) => {
  const { app } = await build(t);
  // Not JSON Schema of its declared dialect; a server or hosted tool before it, so the index is the request's own.
  const bad = { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object', properties: { a: { type: 'nope' } } };
  const responses = await app.inject({
    method: 'POST',
    url: '/v1/responses',
    payload: { model: 'gpt-4o-mini', input: 'x', tools: [{ type: 'custom', name: 'c' }, { type: 'function', name: 't', parameters: bad }] },
  });
  assert.equal(responses.statusCode, 400, responses.body);
  assert.match(json(responses).error.message, /^tools\[1\]\.parameters is not a valid JSON Schema/);
  assert.equal(json(responses).error.param, 'tools[1].parameters');
  const messages = await app.inject({
    method: 'POST',
    url: '/v1/messages',
    payload: {
      model: 'claude-sonnet-4',
      max_tokens: 10,
      messages: [{ role: 'user', content: 'x' }],
      tools: [{ type: 'web_search_20250305', name: 'web_search' }, { name: 't', input_schema: bad }],
    },
  });
  assert.equal(messages.statusCode, 400, messages.body);
  assert.match(json(messages).error.message, /^tools\[1\]\.input_schema is not a valid JSON Schema/);
});

/**
 * svc over an upstream that calls the tool `f` with the arguments the user message spells; `refusal(parameters,
 * args)` is null when svc passes the call on, else the error it streams in its place.
 */
async function toolCallChecks(t: TestContext) {
  const upstream = await startFakeUpstream(t, (request, res) =>
    sendChunks(res, [
      contentChunk('', { choices: [{ index: 0, delta: { role: 'assistant', tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'f', arguments: request.body.messages.at(-1).content } }] }, finish_reason: null }] }),
      contentChunk('', { choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] }),
    ]),
  );
  const { client } = await openaiGateway(t, upstream);
  return async (parameters: Record<string, unknown>, args: Record<string, unknown>): Promise<string | null> => {
    const messages = [{ role: 'user' as const, content: JSON.stringify(args) }];
    try {
      const stream = await client.chat.completions.create({ model: 'gpt-4o-mini', messages, tools: [{ type: 'function', function: { name: 'f', parameters, strict: true } }], stream: true });
      for await (const _chunk of stream);
      return null;
    } catch (error) {
      return (error as Error).message;
    }
  };
}

/** A draft-04 schema of the bounds and `id`s whose meaning draft-04 has its own. */
const draft04Parameters = (dialect: string) => ({
  $schema: dialect,
  type: 'object',
  properties: { id: { type: 'string' }, n: { $ref: '#between' }, m: { type: 'integer', minimum: 1, exclusiveMinimum: false } },
  required: ['id', 'n', 'm'],
  definitions: { between: { id: '#between', type: 'integer', minimum: 1, exclusiveMinimum: true, maximum: 5, exclusiveMaximum: true } },
});

test("a draft-04 schema (zod's target: \"draft-4\", hand-written and OpenAPI-3.0-derived ones) is taken with draft-04's meaning: a boolean exclusiveMinimum/exclusiveMaximum makes minimum/maximum exclusive, an `id` names a subschema for $ref, a property named id is a property", async (t) => {
  const refusal = await toolCallChecks(t);
  const parameters = draft04Parameters('http://json-schema.org/draft-04/schema#');
  assert.equal(await refusal(parameters, { id: 'a', n: 2, m: 1 }), null);
  assert.equal(await refusal(parameters, { id: 'a', n: 4, m: 1 }), null);
  assert.match((await refusal(parameters, { id: 'a', n: 1, m: 1 })) ?? '', /do not match its schema: data\/n must be > 1/, 'minimum 1 with exclusiveMinimum: true takes no 1');
  assert.match((await refusal(parameters, { id: 'a', n: 5, m: 1 })) ?? '', /do not match its schema: data\/n must be < 5/, 'maximum 5 with exclusiveMaximum: true takes no 5');
  assert.match((await refusal(parameters, { id: 'a', n: 2, m: 0 })) ?? '', /do not match its schema: data\/m must be >= 1/);
  assert.match((await refusal(parameters, { id: 3, n: 2, m: 1 })) ?? '', /do not match its schema: data\/id must be string/, 'the property id is a string');
});

test("a schema its declared draft-04 does not allow is a 400 naming where (a numeric exclusiveMinimum was read with draft-06's meaning, a required: [] and a boolean subschema taken), as ajv-draft-04 refuses it; the same schema declaring draft-06 is taken", async (t) => {
  const { app } = await build(t);
  const asked = (schema: Record<string, unknown>) => [
    { url: '/v1/chat/completions', where: 'response_format.json_schema.schema', payload: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }], response_format: { type: 'json_schema', json_schema: { name: 'n', schema } } } },
    { url: '/v1/chat/completions', where: 'tools[0].function.parameters', payload: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }], tools: [tool('t', schema)] } },
  ];
  const refusals: Array<[Record<string, unknown>, RegExp]> = [
    [{ type: 'object', properties: { n: { type: 'number', minimum: 0, exclusiveMinimum: 1 } } }, /\.properties\.n\.exclusiveMinimum must be boolean/],
    [{ type: 'object', properties: { n: { type: 'number', exclusiveMinimum: 1 } } }, /\.properties\.n must have property minimum when property exclusiveMinimum is present/],
    [{ type: 'object', properties: { 'a b': { type: 'number', maximum: 10, exclusiveMaximum: 9 } } }, /\.properties\["a b"\]\.exclusiveMaximum must be boolean/],
    [{ type: 'object', properties: { n: { type: 'number', exclusiveMinimum: true } } }, /\.properties\.n must have property minimum when property exclusiveMinimum is present/],
    [{ type: 'object', properties: { a: { type: 'string' } }, required: [] }, /\.required must NOT have fewer than 1 items/],
    [{ type: 'object', properties: { a: true } }, /\.properties\.a must be object/],
    [{ type: 'object', properties: { a: { anyOf: [{ type: 'string' }, { enum: [] }] } } }, /\.properties\.a\.anyOf\[1\]\.enum must NOT have fewer than 1 items/],
  ];
  for (const [body, message] of refusals) {
    for (const { url, where, payload } of asked({ $schema: 'http://json-schema.org/draft-04/schema#', ...body })) {
      const answer = await app.inject({ method: 'POST', url, payload });
      const label = `${JSON.stringify(body)} as ${where}`;
      assert.equal(answer.statusCode, 400, `${label}: ${answer.body}`);
      const { error } = json(answer);
      assert.ok(error.message.startsWith(`${where} is not a valid JSON Schema of its dialect, draft-04: ${where}.`), `${label}: ${error.message}`);
      assert.match(error.message, message, label);
      assert.equal(error.param, where, label);
    }
  }
  // The same numeric bound in draft-06, where exclusiveMinimum is the bound itself, and an empty required, are taken.
  const draft06 = { $schema: 'http://json-schema.org/draft-06/schema#', type: 'object', properties: { n: { type: 'number', exclusiveMinimum: 1 } }, required: [] };
  for (const { url, where, payload } of asked(draft06)) {
    const answer = await app.inject({ method: 'POST', url, payload });
    assert.equal(answer.statusCode, 200, `${where}: ${answer.body}`);
  }
});

test("a dialect's URI is taken in https as in http, with or without its trailing # (https://json-schema.org/draft-07/schema#, as users write it, was a 400 \"no schema with key or ref\"), with its dialect's meaning, on every wire", async (t) => {
  const refusal = await toolCallChecks(t);
  const spellings = (path: string) => [`https://json-schema.org/${path}#`, `https://json-schema.org/${path}`, `http://json-schema.org/${path}`, `http://json-schema.org/${path}#`];
  for (const dialect of spellings('draft-04/schema')) {
    const parameters = draft04Parameters(dialect);
    assert.equal(await refusal(parameters, { id: 'a', n: 2, m: 1 }), null, dialect);
    assert.match((await refusal(parameters, { id: 'a', n: 1, m: 1 })) ?? '', /data\/n must be > 1/, `${dialect}: draft-04's boolean exclusiveMinimum`);
  }
  const { app } = await build(t);
  const dialects = [...spellings('draft-07/schema'), ...spellings('draft-06/schema'), ...spellings('draft/2020-12/schema'), ...spellings('draft/2019-09/schema')];
  for (const dialect of dialects) {
    const schema = { $schema: dialect, type: 'object', properties: { n: { type: 'integer', exclusiveMinimum: 1 } }, required: ['n'], additionalProperties: false };
    assert.match((await refusal(schema, { n: 1 })) ?? '', /data\/n must be > 1/, dialect);
    assert.equal(await refusal(schema, { n: 2 }), null, dialect);
    const answers = await Promise.all([
      app.inject({ method: 'POST', url: '/v1/chat/completions', payload: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }], response_format: { type: 'json_schema', json_schema: { name: 'n', schema, strict: true } } } }),
      app.inject({ method: 'POST', url: '/v1/responses', payload: { model: 'gpt-4o-mini', input: 'x', text: { format: { type: 'json_schema', name: 'n', schema, strict: true } } } }),
      app.inject({ method: 'POST', url: '/v1/messages', payload: { model: 'claude-sonnet-4', max_tokens: 100, messages: [{ role: 'user', content: 'x' }], output_config: { format: { type: 'json_schema', schema } } } }),
    ]);
    for (const answer of answers) assert.equal(answer.statusCode, 200, `${dialect}: ${answer.body}`);
  }
});

test("a $schema that names no dialect svc reads (another URI, not a string) is a 400 naming the field, with no run; so is one below the root (in a property, a $defs entry beside its $id, a union) that declares another dialect than the root's, or none svc reads, where it was ignored and its subschema read in the root's dialect; one declaring the root's dialect again, and a property or a value named $schema, are taken", async (t) => {
  const { app } = await build(t);
  const asked = (schema: Record<string, unknown>) => [
    { url: '/v1/chat/completions', where: 'response_format.json_schema.schema', payload: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }], response_format: { type: 'json_schema', json_schema: { name: 'n', schema } } } },
    { url: '/v1/chat/completions', where: 'tools[0].function.parameters', payload: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }], tools: [tool('t', schema)] } },
    { url: '/v1/responses', where: 'text.format.schema', payload: { model: 'gpt-4o-mini', input: 'x', text: { format: { type: 'json_schema', name: 'n', schema } } } },
    { url: '/v1/messages', where: 'output_config.format.schema', payload: { model: 'claude-sonnet-4', max_tokens: 10, messages: [{ role: 'user', content: 'x' }], output_config: { format: { type: 'json_schema', schema } } } },
  ];
  const refused = async (schema: Record<string, unknown>, field: (where: string) => string, message: RegExp) => {
    for (const { url, where, payload } of asked(schema)) {
      const answer = await app.inject({ method: 'POST', url, payload });
      const label = `${JSON.stringify(schema.$schema)} on ${url} ${where}`;
      assert.equal(answer.statusCode, 400, `${label}: ${answer.body}`);
      assert.equal(answer.headers['x-svc-run-id'], undefined, label);
      const { error } = json(answer);
      assert.match(error.message, message, label);
      assert.ok(error.message.startsWith(field(where)), `${label}: ${error.message}`);
      if (url !== '/v1/messages') assert.equal(error.param, field(where), label);
    }
  };
  for (const declared of ['https://example.com/my-dialect', 'http://json-schema.org/draft-03/schema#', 'https://json-schema.org/draft-07/schema#x', 'http://constructor', 'https://__proto__', 42, null, {}]) {
    await refused({ $schema: declared, type: 'object' }, (where) => `${where}.$schema`, /is not the URI of a JSON Schema dialect svc reads .*leave it out for draft-07/);
  }
  const draft04 = 'http://json-schema.org/draft-04/schema#';
  const nested: Array<[Record<string, unknown>, string, RegExp]> = [
    [{ type: 'object', properties: { a: { $schema: 5, type: 'string' } } }, '.properties.a.$schema', /names no dialect svc reads, where the schema's root is read as draft-07/],
    [{ type: 'object', properties: { a: { $schema: 'https://example.com/mine', type: 'string' } } }, '.properties.a.$schema', /names no dialect svc reads/],
    // A draft-04 subschema's boolean exclusiveMinimum was refused as "must be number"; a 2020-12 one's prefixItems ignored.
    [{ type: 'object', properties: { n: { $schema: draft04, type: 'integer', minimum: 1, exclusiveMinimum: true } } }, '.properties.n.$schema', /declares draft-04, where the schema's root is read as draft-07: svc reads a schema in its root's dialect throughout/],
    [{ type: 'object', properties: { 'a pair': { $schema: 'https://json-schema.org/draft/2020-12/schema', prefixItems: [{ type: 'string' }] } } }, '.properties["a pair"].$schema', /declares 2020-12, where the schema's root is read as draft-07/],
    [
      { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object', properties: { n: { $ref: 'urn:n' } }, $defs: { n: { $id: 'urn:n', $schema: draft04, type: 'integer' } } },
      '.$defs.n.$schema',
      /declares draft-04, where the schema's root is read as 2020-12: \$defs\.n is an embedded resource \(\$id "urn:n"\) of a dialect of its own, which 2019-09 and later allow and svc does not read/,
    ],
    [
      { $schema: 'https://json-schema.org/draft/2019-09/schema', type: 'object', properties: { n: { $id: 'https://example.com/n', $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'integer' } } },
      '.properties.n.$schema',
      /declares 2020-12, where the schema's root is read as 2019-09: properties\.n is an embedded resource \(\$id "https:\/\/example\.com\/n"\) of a dialect of its own, which 2019-09 and later allow and svc does not read/,
    ],
    [{ $schema: draft04, type: 'object', properties: { v: { anyOf: [{ type: 'null' }, { $schema: 'http://json-schema.org/draft-07/schema#', type: 'number' }] } } }, '.properties.v.anyOf[1].$schema', /declares draft-07, where the schema's root is read as draft-04/],
  ];
  for (const [schema, path, message] of nested) await refused(schema, (where) => `${where}${path}`, message);
  const taken = [
    { $schema: draft04, type: 'object', properties: { n: { $schema: 'https://json-schema.org/draft-04/schema', type: 'integer', minimum: 1, exclusiveMinimum: true } } },
    { type: 'object', properties: { a: { $schema: 'http://json-schema.org/draft-07/schema', type: 'string' } } },
    { type: 'object', properties: { $schema: { type: 'string', enum: ['https://example.com/mine'] }, b: { const: { $schema: 5 }, default: { $schema: 5 } } } },
  ];
  for (const schema of taken) {
    for (const { url, where, payload } of asked(schema)) {
      const answer = await app.inject({ method: 'POST', url, payload });
      assert.equal(answer.statusCode, 200, `${JSON.stringify(schema)} on ${url} ${where}: ${answer.body}`);
    }
  }
});

test("keywords a later draft added are unknown to an earlier one and ignored there, as JSON Schema ignores unknown keywords: if/then/else in draft-06 and draft-04, const, contains and propertyNames in draft-04 (ajv's draft-07 vocabulary read them, and svc refused calls the schema allows)", async (t) => {
  const refusal = await toolCallChecks(t);
  const conditional = (dialect: string) => ({ $schema: dialect, type: 'object', if: { properties: { kind: { enum: ['box'] } } }, then: { required: ['size'] }, else: { required: ['name'] } });
  for (const dialect of ['http://json-schema.org/draft-06/schema#', 'https://json-schema.org/draft-04/schema']) {
    assert.equal(await refusal(conditional(dialect), { kind: 'box' }), null, `${dialect}: then`);
    assert.equal(await refusal(conditional(dialect), { kind: 'bag' }), null, `${dialect}: else`);
  }
  const draft07 = conditional('http://json-schema.org/draft-07/schema#');
  assert.match((await refusal(draft07, { kind: 'box' })) ?? '', /must have required property 'size'/, 'draft-07 has them');
  assert.match((await refusal(draft07, { kind: 'bag' })) ?? '', /must have required property 'name'/, 'draft-07 has them');

  const addedInDraft06 = (dialect: string) => ({
    $schema: dialect,
    type: 'object',
    properties: { kind: { const: 'box' }, tags: { type: 'array', contains: { enum: ['new'] } }, sizes: { type: 'object', propertyNames: { enum: ['w', 'h'] } } },
  });
  const outside = { kind: 'bag', tags: ['old'], sizes: { depth: 1 } };
  assert.equal(await refusal(addedInDraft06('http://json-schema.org/draft-04/schema#'), outside), null);
  for (const [field, value, message] of [['kind', 'bag', /data\/kind must be equal to constant/], ['tags', ['old'], /data\/tags must contain at least 1 valid item/], ['sizes', { depth: 1 }, /data\/sizes property name must be valid/]] as const) {
    assert.match((await refusal(addedInDraft06('http://json-schema.org/draft-06/schema#'), { [field]: value })) ?? '', message, `draft-06 has ${field}'s keyword`);
  }
});

test('a draft-04 schema may give a keyword later drafts added any value, as it may any keyword it does not know (a contains, propertyNames or examples that is no schema or list was refused by the draft-06 meta-schema svc checked its translation against)', async (t) => {
  const refusal = await toolCallChecks(t);
  const odd = {
    $schema: 'http://json-schema.org/draft-04/schema#',
    type: 'object',
    contains: 5,
    propertyNames: 'lower-case',
    examples: 'see the docs',
    properties: { a: { type: 'string', examples: { a: 1 }, contains: [1], const: 'b' } },
    required: ['a'],
  };
  assert.equal(await refusal(odd, { a: 'x' }), null);
  assert.match((await refusal(odd, { a: 1 })) ?? '', /do not match its schema: data\/a must be string/, 'the keywords draft-04 has still hold');
});

test("keywords beside a $ref are ignored in draft-07 and earlier, as those drafts say, where svc applied them (a minimum beside a $ref refused calls the schema allows), and apply in 2019-09 and 2020-12; a $ref into definitions beside it still resolves", async (t) => {
  const refusal = await toolCallChecks(t);
  const beside = (dialect: string | undefined, definitions: string) => ({
    ...(dialect && { $schema: dialect }),
    type: 'object',
    properties: { n: { $ref: `#/${definitions}/count`, minimum: 5, description: 'how many' } },
    required: ['n'],
    [definitions]: { count: { type: 'integer' } },
  });
  for (const dialect of [undefined, 'http://json-schema.org/draft-07/schema#', 'http://json-schema.org/draft-06/schema#', 'http://json-schema.org/draft-04/schema#']) {
    assert.equal(await refusal(beside(dialect, 'definitions'), { n: 1 }), null, `${dialect}: the minimum beside $ref is ignored`);
    assert.match((await refusal(beside(dialect, 'definitions'), { n: 'x' })) ?? '', /data\/n must be integer/, `${dialect}: the $ref holds`);
  }
  for (const dialect of ['https://json-schema.org/draft/2019-09/schema', 'https://json-schema.org/draft/2020-12/schema']) {
    assert.match((await refusal(beside(dialect, '$defs'), { n: 1 })) ?? '', /data\/n must be >= 5/, `${dialect}: the minimum beside $ref applies`);
    assert.equal(await refusal(beside(dialect, '$defs'), { n: 6 }), null, dialect);
  }
  // zod-to-json-schema's shape: the root a $ref beside the definitions it points into.
  const rooted = { $schema: 'http://json-schema.org/draft-07/schema#', $ref: '#/definitions/args', definitions: { args: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] } } };
  assert.equal(await refusal(rooted, { n: 1 }), null);
  assert.match((await refusal(rooted, { n: 'x' })) ?? '', /data\/n must be integer/);
});

test("a type, a nullable or an $id beside a $ref is ignored in draft-07 and earlier too, where ajv still checked the type (a $ref to an integer beside type string refused 1 and \"x\" alike), failed to compile a nullable and resolved the $ref against the $id; a type beside a $ref applies in 2020-12", async (t) => {
  const refusal = await toolCallChecks(t);
  const typed = (dialect: string | undefined, definitions: string) => ({
    ...(dialect && { $schema: dialect }),
    type: 'object',
    properties: { n: { $ref: `#/${definitions}/count`, type: 'string' } },
    required: ['n'],
    [definitions]: { count: { type: 'integer' } },
  });
  for (const dialect of [undefined, 'http://json-schema.org/draft-07/schema#', 'http://json-schema.org/draft-06/schema#', 'http://json-schema.org/draft-04/schema#']) {
    assert.equal(await refusal(typed(dialect, 'definitions'), { n: 1 }), null, `${dialect}: the type beside $ref is ignored`);
    assert.match((await refusal(typed(dialect, 'definitions'), { n: 'x' })) ?? '', /data\/n must be integer/, `${dialect}: the $ref holds`);
  }
  assert.match((await refusal(typed('https://json-schema.org/draft/2020-12/schema', '$defs'), { n: 1 })) ?? '', /data\/n must be string/, '2020-12: the type beside $ref applies');
  // OpenAPI 3.0's way to allow null beside a $ref, which draft-07 does not know.
  const nullable = { type: 'object', properties: { s: { $ref: '#/definitions/s', nullable: true } }, definitions: { s: { type: 'string' } } };
  assert.equal(await refusal(nullable, { s: 'x' }), null);
  assert.match((await refusal(nullable, { s: null })) ?? '', /data\/s must be string/);
  // The JSON Schema Test Suite's "$ref prevents a sibling $id from changing the base uri" (draft-07).
  const sibling = {
    $id: 'http://localhost:1234/sibling_id/base/',
    type: 'object',
    properties: { v: { $id: 'http://localhost:1234/sibling_id/', $ref: 'foo.json' } },
    definitions: { foo: { $id: 'http://localhost:1234/sibling_id/foo.json', type: 'string' }, base_foo: { $id: 'foo.json', type: 'number' } },
  };
  assert.equal(await refusal(sibling, { v: 1 }), null);
  assert.match((await refusal(sibling, { v: 'a' })) ?? '', /data\/v must be number/);
});

test("an `id` (draft-04's spelling of $id) is an unknown keyword in draft-06 and later, and ignored there as JSON Schema ignores those, on every wire (ajv refused the schema: a 400 saying its keyword id is NOT SUPPORTED, naming no place); it names no subschema for a $ref there", async (t) => {
  const withId = (dialect: string | undefined) => ({
    ...(dialect && { $schema: dialect }),
    type: 'object',
    id: 'args',
    properties: { n: { id: 5, type: 'integer' }, id: { type: 'string' } },
    required: ['n'],
  });
  const dialects = [undefined, 'http://json-schema.org/draft-07/schema#', 'http://json-schema.org/draft-06/schema#', 'https://json-schema.org/draft/2019-09/schema', 'https://json-schema.org/draft/2020-12/schema'];
  const { app } = await build(t);
  for (const dialect of dialects) {
    const schema = withId(dialect);
    const answers = await Promise.all([
      app.inject({ method: 'POST', url: '/v1/chat/completions', payload: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }], response_format: { type: 'json_schema', json_schema: { name: 'n', schema } } } }),
      app.inject({ method: 'POST', url: '/v1/chat/completions', payload: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }], tools: [tool('t', schema)] } }),
      app.inject({ method: 'POST', url: '/v1/responses', payload: { model: 'gpt-4o-mini', input: 'x', text: { format: { type: 'json_schema', name: 'n', schema } } } }),
      app.inject({ method: 'POST', url: '/v1/responses', payload: { model: 'gpt-4o-mini', input: 'x', tools: [{ type: 'function', name: 't', parameters: schema }] } }),
      app.inject({ method: 'POST', url: '/v1/messages', payload: { model: 'claude-sonnet-4', max_tokens: 100, messages: [{ role: 'user', content: 'x' }], output_config: { format: { type: 'json_schema', schema } } } }),
      app.inject({ method: 'POST', url: '/v1/messages', payload: { model: 'claude-sonnet-4', max_tokens: 100, messages: [{ role: 'user', content: 'x' }], tools: [{ name: 't', input_schema: schema }] } }),
    ]);
    for (const answer of answers) assert.equal(answer.statusCode, 200, `${dialect}: ${answer.body}`);
  }
  // The schema still holds beside it; an `id` names no subschema for a $ref there, as it does in draft-04.
  const refusal = await toolCallChecks(t);
  for (const dialect of dialects) {
    assert.equal(await refusal(withId(dialect), { n: 1, id: 'a' }), null, `${dialect}`);
    assert.match((await refusal(withId(dialect), { n: 'x' })) ?? '', /data\/n must be integer/, `${dialect}`);
  }
  const anchored = { type: 'object', properties: { n: { $ref: '#count' } }, definitions: { count: { id: '#count', type: 'integer' } } };
  assert.throws(() => compileTools([tool('t', anchored)]), /tools\[0\]\.function\.parameters is not a valid JSON Schema: can't resolve reference #count/);
});

test("OpenAPI 3.0's nullable: true beside a type adds null to it, in every dialect; anywhere else it means nothing, in OpenAPI 3.0 as in JSON Schema, and is ignored, where ajv refused the schema (a 400 for an allOf of a $ref beside nullable, OpenAPI generators' nullable reference, for an enum beside it, a nullable: false beside type null, a nullable not boolean)", async (t) => {
  const refusal = await toolCallChecks(t);
  const holding = (v: Record<string, unknown>, dialect?: string) => ({
    ...(dialect && { $schema: dialect }),
    type: 'object',
    properties: { v },
    required: ['v'],
    definitions: { s: { type: 'string' } },
    $defs: { s: { type: 'string' } },
  });
  for (const dialect of [undefined, 'http://json-schema.org/draft-04/schema#', 'https://json-schema.org/draft/2020-12/schema']) {
    const typed = holding({ type: 'string', nullable: true }, dialect);
    assert.equal(await refusal(typed, { v: null }), null, `${dialect}: nullable beside a type`);
    assert.match((await refusal(typed, { v: 1 })) ?? '', /data\/v must be string/, `${dialect}: nullable beside a type`);
  }
  // Each with a value it takes, and what it says of null (of 1 beside type null), which it does not take but for `nullable: true` alone.
  const ignored: Array<[Record<string, unknown>, unknown, RegExp | null, string?]> = [
    [{ allOf: [{ $ref: '#/definitions/s' }], nullable: true }, 'x', /data\/v must be string/],
    [{ enum: ['a', 'b'], nullable: true }, 'a', /data\/v must be equal to one of the allowed values/],
    [{ nullable: true }, 'x', null],
    [{ type: 'null', nullable: false }, null, /data\/v must be null/],
    [{ type: 'string', nullable: 'yes' }, 'x', /data\/v must be string/],
    [{ $ref: '#/$defs/s', nullable: true }, 'x', /data\/v must be string/, 'https://json-schema.org/draft/2020-12/schema'],
  ];
  for (const [v, taken, refused, dialect] of ignored) {
    const label = `${dialect ?? ''} ${JSON.stringify(v)}`;
    assert.equal(await refusal(holding(v, dialect), { v: taken }), null, label);
    if (refused) assert.match((await refusal(holding(v, dialect), { v: v.type === 'null' ? 1 : null })) ?? '', refused, `${label}: null is not added`);
  }
});

test("a $ref into a keyword no dialect knows (OpenAPI's #/components/schemas/A) leads to a target svc reads as any other: a nullable without a type there is ignored (ajv refused the schema, a 400), a draft-07 $ref there has the keywords beside it ignored (its type was checked), a draft-04 bound there keeps draft-04's meaning; through cycles and pointers into places walked already", async (t) => {
  const components = (schemas: Record<string, unknown>, dialect?: string) => ({
    ...(dialect && { $schema: dialect }),
    type: 'object',
    properties: { a: { $ref: '#/components/schemas/A' } },
    required: ['a'],
    components: { schemas },
  });
  // A tree of OpenAPI 3.0's shape: a cycle through components, a pointer into what the keywords reach, one percent-escaped.
  const openapi = components({
    A: { type: 'object', properties: { kind: { $ref: '#/components/schemas/Kind%20Of' }, child: { $ref: '#/components/schemas/A' }, again: { $ref: '#/properties/a' } } },
    'Kind Of': { nullable: true, enum: ['leaf', 'branch'] },
  });
  const { app } = await build(t);
  const answers = await Promise.all([
    app.inject({ method: 'POST', url: '/v1/chat/completions', payload: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }], response_format: { type: 'json_schema', json_schema: { name: 'n', schema: openapi } } } }),
    app.inject({ method: 'POST', url: '/v1/chat/completions', payload: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }], tools: [tool('t', openapi)] } }),
  ]);
  for (const answer of answers) assert.equal(answer.statusCode, 200, answer.body);
  // A pointer that does not decode is ajv's to refuse, with a 400.
  const malformed = components({ A: { $ref: '#/components/schemas/%E0' } });
  const refused = await app.inject({ method: 'POST', url: '/v1/chat/completions', payload: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }], tools: [tool('t', malformed)] } });
  assert.equal(refused.statusCode, 400, refused.body);
  assert.match(json(refused).error.message, /^tools\[0\]\.function\.parameters is not a valid JSON Schema/);

  const refusal = await toolCallChecks(t);
  assert.equal(await refusal(openapi, { a: { kind: 'leaf', child: { kind: 'branch' }, again: { kind: 'leaf' } } }), null);
  assert.match((await refusal(openapi, { a: { child: { kind: null } } })) ?? '', /data\/a\/child\/kind must be equal to one of the allowed values/, 'nullable without a type adds no null');
  for (const dialect of [undefined, 'http://json-schema.org/draft-07/schema#']) {
    const typed = components({ A: { $ref: '#/components/schemas/B', type: 'string' }, B: { type: 'integer' } }, dialect);
    assert.equal(await refusal(typed, { a: 1 }), null, `${dialect}: the type beside the target's $ref is ignored`);
    assert.match((await refusal(typed, { a: 'x' })) ?? '', /data\/a must be integer/, `${dialect}: the target's $ref holds`);
  }
  const draft04 = components({ A: { type: 'integer', minimum: 1, exclusiveMinimum: true } }, 'http://json-schema.org/draft-04/schema#');
  assert.equal(await refusal(draft04, { a: 2 }), null);
  assert.match((await refusal(draft04, { a: 1 })) ?? '', /data\/a must be > 1/);
});

test("a schema that names itself whole ($ref: \"#\", as OpenAI's recursive structured-output example does) is taken and checked at every depth, in each dialect; it was a 400 \"can't resolve reference # from id #\" (a root without an $id had no base to resolve it against); an unresolvable reference is still a 400 naming the schema's own base", async (t) => {
  // OpenAI's example of a recursive schema: a UI component whose children are UI components.
  const ui = (dialect?: string) => ({
    ...(dialect && { $schema: dialect }),
    type: 'object',
    properties: {
      type: { type: 'string', enum: ['div', 'button', 'header', 'section', 'field', 'form'] },
      label: { type: 'string' },
      children: { type: 'array', items: { $ref: '#' } },
    },
    required: ['type', 'label', 'children'],
    additionalProperties: false,
  });
  const { app } = await build(t);
  const ask = (payload: Record<string, unknown>) => app.inject({ method: 'POST', url: '/v1/chat/completions', payload: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }], ...payload } });
  const dialects = [undefined, 'http://json-schema.org/draft-07/schema#', 'http://json-schema.org/draft-04/schema#', 'https://json-schema.org/draft/2020-12/schema'];
  for (const dialect of dialects) {
    const formatted = await ask({ response_format: { type: 'json_schema', json_schema: { name: 'ui', schema: ui(dialect), strict: true } } });
    assert.equal(formatted.statusCode, 200, `${dialect}: ${formatted.body}`);
    // The mock's answer is sampled from the schema and must pass svc's own check of it.
    const answer = JSON.parse(json(formatted).choices[0].message.content);
    assert.equal(typeof answer.label, 'string', dialect);
    const tooled = await ask({ tools: [tool('t', ui(dialect))] });
    assert.equal(tooled.statusCode, 200, `${dialect}: ${tooled.body}`);
  }
  const refusal = await toolCallChecks(t);
  const leaf = (label: string) => ({ type: 'field', label, children: [] });
  assert.equal(await refusal(ui(), { type: 'form', label: 'f', children: [{ type: 'section', label: 's', children: [leaf('a'), leaf('b')] }] }), null);
  assert.match((await refusal(ui(), { type: 'form', label: 'f', children: [{ type: 'section', label: 's', children: [{ type: 'field', label: 3, children: [] }] }] })) ?? '', /data\/children\/0\/children\/0\/label must be string/, 'checked two levels down');
  const missing = await ask({ tools: [tool('t', { type: 'object', properties: { a: { $ref: '#/definitions/missing' } } })] });
  assert.equal(missing.statusCode, 400, missing.body);
  assert.equal(json(missing).error.message, 'tools[0].function.parameters is not a valid JSON Schema: can\'t resolve reference #/definitions/missing from id #');
});

test("a $ref of an anchor's name (#node: an $id of \"#node\" in draft-06/07, id in draft-04, $anchor in 2019-09/2020-12, under definitions or a keyword no dialect knows) leads the mock's sampler and svc's edits of the schema to the schema so named, as it leads svc's check: the sampler wrote null there, and a nullable, a draft-07 $ref's neighbours and draft-04's bounds there were read as if no edit applied", async (t) => {
  const node = { type: 'object', properties: { v: { type: 'integer' }, kids: { type: 'array', items: { $ref: '#node' } } }, required: ['v', 'kids'] };
  const named = (dialect: string | undefined, under: string, anchor: Record<string, unknown>) => ({
    ...(dialect && { $schema: dialect }),
    type: 'object',
    properties: { n: { $ref: '#node' } },
    required: ['n'],
    [under]: { node: { ...anchor, ...node } },
  });
  const shapes = [
    named(undefined, 'definitions', { $id: '#node' }),
    named('http://json-schema.org/draft-06/schema#', 'components', { $id: '#node' }),
    named('http://json-schema.org/draft-04/schema#', 'definitions', { id: '#node' }),
    named('https://json-schema.org/draft/2019-09/schema', 'components', { $anchor: 'node' }),
    named('https://json-schema.org/draft/2020-12/schema', '$defs', { $anchor: 'node' }),
  ];
  const { app } = await build(t);
  for (const schema of shapes) {
    const formatted = await app.inject({ method: 'POST', url: '/v1/chat/completions', payload: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }], response_format: { type: 'json_schema', json_schema: { name: 'n', schema } } } });
    assert.equal(formatted.statusCode, 200, `${JSON.stringify(schema)}: ${formatted.body}`);
    // The mock's answer is sampled from the schema and passed svc's own check of it.
    assert.equal(typeof JSON.parse(json(formatted).choices[0].message.content).n.v, 'number', JSON.stringify(schema));
  }
  const refusal = await toolCallChecks(t);
  for (const schema of shapes) {
    assert.equal(await refusal(schema, { n: { v: 1, kids: [{ v: 2, kids: [] }] } }), null, JSON.stringify(schema));
    assert.match((await refusal(schema, { n: { v: 1, kids: [{ v: 'x', kids: [] }] } })) ?? '', /data\/n\/kids\/0\/v must be integer/, JSON.stringify(schema));
  }
  // Reached only by the anchor: svc's edits of what it compiles reach it too.
  const only = (target: Record<string, unknown>, dialect?: string) => ({ ...(dialect && { $schema: dialect }), type: 'object', properties: { a: { $ref: '#only' } }, required: ['a'], components: { only: target } });
  const nullable = only({ $id: '#only', nullable: true, enum: ['x'] });
  assert.equal(await refusal(nullable, { a: 'x' }), null, 'a nullable without a type is ignored there');
  const besideRef = only({ $id: '#only', type: 'object', properties: { b: { $ref: '#/definitions/count', type: 'string' } } });
  (besideRef as Record<string, unknown>).definitions = { count: { type: 'integer' } };
  assert.equal(await refusal(besideRef, { a: { b: 1 } }), null, 'the type beside a draft-07 $ref is ignored there');
  const draft04 = only({ id: '#only', type: 'integer', minimum: 1, exclusiveMinimum: true }, 'http://json-schema.org/draft-04/schema#');
  assert.equal(await refusal(draft04, { a: 2 }), null);
  assert.match((await refusal(draft04, { a: 1 })) ?? '', /data\/a must be > 1/, "draft-04's exclusiveMinimum: true holds there");
});

test('a decimal multipleOf takes the decimals it steps by (19.99 for multipleOf 0.01, 0.3 for 0.1, where ajv\'s whole-quotient check refused them) and still refuses what lies between its steps', async (t) => {
  const refusal = await toolCallChecks(t);
  const priced = (multipleOf: number) => ({ type: 'object', properties: { v: { type: 'number', multipleOf } }, required: ['v'] });
  for (const [multipleOf, v] of [[0.01, 19.99], [0.01, 1234567.89], [0.1, 0.3], [0.1, 0.7], [0.05, 4.35], [2.5, 7.5]] as const) {
    assert.equal(await refusal(priced(multipleOf), { v }), null, `${v} is a multiple of ${multipleOf}`);
  }
  for (const [multipleOf, v] of [[0.01, 19.995], [0.1, 0.35], [2.5, 6]] as const) {
    assert.match((await refusal(priced(multipleOf), { v })) ?? '', new RegExp(`data/v must be multiple of ${multipleOf}`), `${v} is no multiple of ${multipleOf}`);
  }
});

test("tool-call arguments naming a field twice in one object are an invalid tool call on every wire, buffered and streamed: svc checked the last one's value (JSON.parse's reading) and emitted the text whole, whose reader may keep the first or refuse it", async (t) => {
  const schema = { type: 'object', properties: { to: { enum: ['alice@example.com'] }, cc: { type: 'object' } }, required: ['to'] };
  // The arguments the model writes are the last user message's text: one that passes, and the duplicates.
  const upstream = await startFakeUpstream(t, (request, res) => {
    const body = request.body;
    const args: string = body.messages?.at(-1).content ?? body.input;
    if (request.url.endsWith('/messages')) {
      const [start, , , , , , stop] = messageEvents('unused');
      startSse(res);
      const events: Array<[string, unknown]> = [
        start!,
        ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: 'toolu_1', name: 'send', input: {} } }],
        ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: args } }],
        ['content_block_stop', { type: 'content_block_stop', index: 0 }],
        ['message_delta', { type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 5 } }],
        stop!,
      ];
      for (const [name, data] of events) res.write(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`);
      res.end();
      return;
    }
    if (request.url.endsWith('/responses')) {
      const item = { id: 'fc_1', type: 'function_call', status: 'completed', call_id: 'call_1', name: 'send', arguments: args };
      return sendJson(res, 200, { id: 'resp_up', object: 'response', created_at: 1700000000, status: 'completed', model: body.model, output: [item], usage: { input_tokens: 9, output_tokens: 3, total_tokens: 12 } });
    }
    const call = { index: 0, id: 'call_1', type: 'function', function: { name: 'send', arguments: args } };
    if (body.stream) {
      return sendChunks(res, [
        contentChunk('', { choices: [{ index: 0, delta: { role: 'assistant', tool_calls: [call] }, finish_reason: null }] }),
        contentChunk('', { choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] }),
      ]);
    }
    const message = { role: 'assistant', content: null, refusal: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'send', arguments: args } }] };
    sendJson(res, 200, { id: 'chatcmpl-up', object: 'chat.completion', created: 1700000000, model: body.model, choices: [{ index: 0, message, finish_reason: 'tool_calls', logprobs: null }], usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 } });
  });
  const { app } = await build(t, {
    env: { CHATCOMP_API_KEY: 'sk-upstream', CHATCOMP_BASE_URL: upstream.baseUrl, MESSAGES_API_KEY: 'sk-ant-api03-Qx7Rk2Lm9Vt4Wz8N', MESSAGES_BASE_URL: upstream.baseUrl.replace(/\/v1$/, '') },
  });
  const wires = {
    'chat, buffered': (args: string) => ({ url: '/v1/chat/completions', payload: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: args }], tools: [tool('send', schema)] } }),
    'chat, streamed': (args: string) => ({ url: '/v1/chat/completions', payload: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: args }], tools: [tool('send', schema)], stream: true } }),
    'responses, buffered': (args: string) => ({ url: '/v1/responses', payload: { model: 'gpt-4o-mini', input: args, tools: [{ type: 'function', name: 'send', parameters: schema }] } }),
    'messages, streamed': (args: string) => ({
      url: '/v1/messages',
      payload: { model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: args }], tools: [{ name: 'send', input_schema: schema }], stream: true },
    }),
  };
  for (const [wire, request] of Object.entries(wires)) {
    const ask = async (args: string) => {
      const response = await app.inject({ method: 'POST', headers: { 'x-svc-cache-bypass': 'true' }, ...request(args) });
      const run = json(await app.inject({ url: `/api/v1/runs/${response.headers['x-svc-run-id']}` })).run;
      return { response, run };
    };
    const fine = await ask('{"to":"alice@example.com","cc":{"a":1}}');
    assert.equal(fine.run.status, 'completed', `${wire}: ${fine.response.body}`);
    for (const [args, path] of [
      ['{"to":"mallory@example.com","to":"alice@example.com"}', 'to'],
      ['{"to":"alice@example.com","cc":{"a":1,"\\u0061":2}}', 'cc.a'],
    ] as const) {
      const { response, run } = await ask(args);
      assert.equal(run.status, 'failed', `${wire}, ${args}: ${response.body}`);
      assert.equal(run.error.kind, 'invalid_tool_call', wire);
      assert.match(run.error.message, new RegExp(`the arguments of "send" name ${path.replace('.', '\\.')} twice`), wire);
      assert.doesNotMatch(response.body, /mallory/, wire);
      if (wire.endsWith('buffered')) assert.equal(response.statusCode, 502, wire);
      else assert.match(response.body, /invalid_tool_call|event: error/, wire);
    }
  }
});

test("a schema's property named like an Object.prototype member (toString, constructor, hasOwnProperty, __proto__) is checked on the arguments' own members only: ajv read an inherited one as present, so a required toString or __proto__ let {} through and an optional constructor refused {}", async (t) => {
  const refusal = await toolCallChecks(t);
  // JSON.parse makes `__proto__` an own member, as svc's reading of the model's arguments has it.
  const own = (text: string) => JSON.parse(text) as Record<string, unknown>;
  for (const name of ['toString', 'valueOf', 'constructor', '__proto__', '__defineGetter__']) {
    const required = { type: 'object', required: [name] };
    assert.match((await refusal(required, {})) ?? '', new RegExp(`do not match its schema: data must have required property '${name}'`), `required ${name}`);
    assert.equal(await refusal(required, own(`{${JSON.stringify(name)}:1}`)), null, `${name} given`);
  }
  const optional = { type: 'object', properties: { constructor: { type: 'string' }, hasOwnProperty: { type: 'string' } }, dependencies: { toString: ['valueOf'] } };
  assert.equal(await refusal(optional, {}), null, 'none of them given');
  assert.equal(await refusal(optional, { constructor: 'x' }), null);
  assert.match((await refusal(optional, { constructor: 1 })) ?? '', /data\/constructor must be string/);
  assert.match((await refusal(optional, { toString: 'x' })) ?? '', /data must have property valueOf when property toString is present/);
  const closed = { type: 'object', properties: { a: { type: 'string' } }, additionalProperties: false };
  assert.match((await refusal(closed, own('{"a":"x","__proto__":{"polluted":true}}'))) ?? '', /data must NOT have additional properties/);
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
});
