/**
 * Structured outputs as the official `openai` client's users ask for them (`chat.completions.parse` / `.stream` with
 * `zodResponseFormat`, `responses.parse` / `.stream` with `zodTextFormat`, `runTools` with `zodFunction`), answered by
 * the mock provider: the SDK checks every answer against the zod schema, so an answer the schema refuses fails here.
 */
import assert from 'node:assert/strict';
import test, { type TestContext } from 'node:test';
import OpenAI from 'openai';
import { zodFunction, zodResponseFormat, zodTextFormat } from 'openai/helpers/zod';
import { z } from 'zod';
import { compileTools } from '../../src/gateway/tool-schemas.ts';
import { build } from '../support/build.ts';
import { loadScaled } from '../support/load-scaled.ts';

async function mockClient(t: TestContext) {
  const { app } = await build(t);
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  return new OpenAI({ baseURL: `${address}/v1`, apiKey: 'sk-local-dev', maxRetries: 0, timeout: loadScaled(20_000) });
}

/** Every answer to `schema`, through each of the SDK's structured-output helpers. */
async function parsedAnswers(client: OpenAI, schema: z.ZodObject, name: string): Promise<unknown[]> {
  const messages = [{ role: 'user' as const, content: `answer as ${name}` }];
  const model = 'gpt-4o-mini';
  const chat = await client.chat.completions.parse({ model, messages, response_format: zodResponseFormat(schema, name) });
  const chatStream = await client.chat.completions.stream({ model, messages, response_format: zodResponseFormat(schema, name) }).finalChatCompletion();
  const responses = await client.responses.parse({ model, input: messages, text: { format: zodTextFormat(schema, name) } });
  const responsesStream = await client.responses.stream({ model, input: messages, text: { format: zodTextFormat(schema, name) } }).finalResponse();
  let toolArguments: unknown;
  const runner = client.chat.completions.runTools({
    model,
    messages: [{ role: 'user', content: `call ${name}` }],
    tools: [zodFunction({ name, parameters: schema, function: (args: unknown) => ((toolArguments = args), 'done') })],
  });
  await runner.finalContent();
  return [chat.choices[0]!.message.parsed, chatStream.choices[0]!.message.parsed, responses.output_parsed, responsesStream.output_parsed, toolArguments];
}

test("the mock's structured answers and tool arguments match the schema's string patterns (zod's .regex() and z.iso.time(), whose pattern takes no offset), buffered and streamed, on the chat and responses wires", async (t) => {
  const client = await mockClient(t);
  const Order = z.object({
    zip: z.string().regex(/^[0-9]{5}$/),
    code: z.string().regex(/^[A-Z]{3}-\d{2}$/),
    at: z.iso.time(),
    email: z.email(),
    when: z.iso.datetime(),
  });
  for (const answer of await parsedAnswers(client, Order, 'order')) {
    assert.deepEqual(Order.safeParse(answer).error, undefined, JSON.stringify(answer));
  }
});

test("the mock's structured answers and tool arguments end a recursive schema (a tree whose children are its own $ref) with an empty array, where it wrote nulls the schema refuses; nested objects, arrays, enums, unions and bounds alongside it", async (t) => {
  const client = await mockClient(t);
  type Category = { name: string; children: Category[] };
  const Category: z.ZodType<Category> = z.object({ name: z.string().min(2), get children() { return z.array(Category); } });
  const Catalogue = z.object({
    root: Category,
    kind: z.enum(['book', 'film']),
    tags: z.array(z.string()).min(2).max(3),
    price: z.number().gt(0).lt(1),
    stock: z.int().min(5).max(9),
    note: z.string().nullable(),
    item: z.discriminatedUnion('type', [z.object({ type: z.literal('a'), size: z.number() }), z.object({ type: z.literal('b') })]),
  });
  for (const answer of await parsedAnswers(client, Catalogue, 'catalogue')) {
    assert.deepEqual(Catalogue.safeParse(answer).error, undefined, JSON.stringify(answer));
  }
});

/** The answers to `schema` as response_format, text.format and a strict tool's parameters (streamed), each parsed. */
async function schemaAnswers(client: OpenAI, schema: Record<string, unknown>, name: string): Promise<unknown[]> {
  const model = 'gpt-4o-mini';
  const chat = await client.chat.completions.create({ model, messages: [{ role: 'user', content: `a ${name}` }], response_format: { type: 'json_schema', json_schema: { name, schema, strict: true } } });
  const responses = await client.responses.create({ model, input: `a ${name}`, text: { format: { type: 'json_schema', name, schema, strict: true } } });
  const called = await client.chat.completions.create({ model, messages: [{ role: 'user', content: `call ${name}` }], tools: [{ type: 'function', function: { name, parameters: schema, strict: true } }], stream: true });
  let args = '';
  for await (const chunk of called) args += chunk.choices[0]?.delta.tool_calls?.[0]?.function?.arguments ?? '';
  return [JSON.parse(chat.choices[0]!.message.content!), JSON.parse(responses.output_text), JSON.parse(args)];
}

test("a schema declaring JSON Schema 2020-12 (what zod's z.toJSONSchema() writes by default, $schema and prefixItems) is taken as response_format, text.format and a strict tool's parameters, where svc refused it as not a valid JSON Schema; the answer matches it", async (t) => {
  const client = await mockClient(t);
  const Pair = z.object({ label: z.string(), pair: z.tuple([z.string(), z.number()]) });
  const schema = z.toJSONSchema(Pair) as Record<string, unknown>;
  assert.equal(schema.$schema, 'https://json-schema.org/draft/2020-12/schema');
  for (const answer of await schemaAnswers(client, schema, 'pair')) assert.deepEqual(Pair.safeParse(answer).error, undefined);
});

test("a schema declaring JSON Schema draft-06 (numeric exclusive bounds, const) is taken as response_format, text.format and a strict tool's parameters, where svc refused it with \"no schema with key or ref\"; the answer matches it", async (t) => {
  const client = await mockClient(t);
  const Count = z.object({ kind: z.literal('count'), count: z.int().gt(1).lt(5) });
  // What zod writes for draft-07 uses nothing draft-06 lacks.
  const schema = { ...(z.toJSONSchema(Count, { target: 'draft-7' }) as Record<string, unknown>), $schema: 'http://json-schema.org/draft-06/schema#' };
  for (const answer of await schemaAnswers(client, schema, 'count')) assert.deepEqual(Count.safeParse(answer).error, undefined);
});

test("the mock's answers to a draft-04 schema (zod's target: \"draft-4\": a boolean exclusiveMinimum/exclusiveMaximum beside minimum/maximum) keep out of the excluded bounds, where it wrote the bound itself and svc refused its own tool call", async (t) => {
  const client = await mockClient(t);
  const Count = z.object({ id: z.string(), count: z.int().gt(1).lt(5), ratio: z.number().gt(1.5).lt(3) });
  const schema = z.toJSONSchema(Count, { target: 'draft-4' }) as Record<string, unknown>;
  assert.equal(schema.$schema, 'http://json-schema.org/draft-04/schema#');
  for (const answer of await schemaAnswers(client, schema, 'count')) assert.deepEqual(Count.safeParse(answer).error, undefined, JSON.stringify(answer));
});

test("a schema with string formats (zod's z.email(), z.uuid(), z.url()) is compiled without ajv writing \"unknown format ... ignored\" to the console, outside svc's log, twice per format", async (t) => {
  const client = await mockClient(t);
  const warn = t.mock.method(console, 'warn', () => {});
  const log = t.mock.method(console, 'log', () => {});
  const Contact = z.object({ email: z.email(), id: z.uuid(), site: z.url() });
  for (const answer of await parsedAnswers(client, Contact, 'contact')) assert.deepEqual(Contact.safeParse(answer).error, undefined);
  assert.deepEqual([...warn.mock.calls, ...log.mock.calls].map((call) => call.arguments), []);
});

test("the mock's structured answers and tool arguments keep inside bounds less than 1 apart (z.number().gt(1.5).lt(2)), below the value it starts from, and a multipleOf within its bounds, where it wrote a bound or past it (a document the schema refuses, a tool call svc refused)", async (t) => {
  const client = await mockClient(t);
  const Narrow = z.object({
    ratio: z.number().gt(1.5).lt(2),
    tiny: z.number().gt(0).lt(0.001),
    closed: z.number().min(1.6).max(1.7),
    below: z.number().lt(-10),
    atMost: z.number().max(-3),
    above: z.number().gt(100),
    exact: z.int().min(3).max(3),
    between: z.int().gt(7).lt(9),
    step: z.number().min(0).max(1).multipleOf(0.25),
    stepBelow: z.int().multipleOf(4).gt(-9).lt(-3),
  });
  for (const answer of await parsedAnswers(client, Narrow, 'narrow')) {
    assert.deepEqual(Narrow.safeParse(answer).error, undefined, JSON.stringify(answer));
  }
});

test("a required integer whose bounds allow none (z.int().gt(1).lt(2)) is the mock's 400 saying so, as response_format and as a tool's parameters, buffered and streamed, rather than an answer no schema check passes", async (t) => {
  const client = await mockClient(t);
  const Empty = z.object({ count: z.int().gt(1).lt(2) });
  const model = 'gpt-4o-mini';
  const asks = [
    { of: "the structured output's schema", body: { messages: [{ role: 'user' as const, content: 'a count' }], response_format: zodResponseFormat(Empty, 'empty') } },
    { of: "tool pick's parameters", body: { messages: [{ role: 'user' as const, content: 'pick' }], tools: [zodFunction({ name: 'pick', parameters: Empty })], tool_choice: 'required' as const } },
  ];
  for (const { of, body } of asks) {
    for (const stream of [false, true]) {
      const error = await client.chat.completions.create({ model, ...body, stream } as never).then(
        async (answer: unknown) => {
          if (stream) for await (const _chunk of answer as AsyncIterable<unknown>);
          return null;
        },
        (caught: unknown) => caught,
      );
      assert.ok(error instanceof OpenAI.BadRequestError, `${of}, stream ${stream}: ${String(error)}`);
      assert.equal(error.message, `400 the mock provider can write no value of ${of}: no integer lies above 1 and below 2 (count)`);
    }
  }
  // The responses wire's mock plans with the same planner: its text.format alike.
  const refused = await client.responses.create({ model, input: 'a count', text: { format: zodTextFormat(Empty, 'empty') } }).then(
    () => null,
    (caught: unknown) => caught,
  );
  assert.ok(refused instanceof OpenAI.BadRequestError, String(refused));
  assert.match(refused.message, /no integer lies above 1 and below 2 \(count\)$/);
});

test("the mock's integers keep to a fractional multipleOf (an integer multiple of 2.5 is one of 5, of 0.5 any integer), where it wrote 1 whatever the step, and its decimals to a decimal one (3 × 0.1 written 0.3): each answer passes svc's own check of the schema", async (t) => {
  const client = await mockClient(t);
  const cases: Record<string, Record<string, unknown>> = {
    half: { type: 'integer', multipleOf: 0.5 },
    fives: { type: 'integer', multipleOf: 2.5 },
    fivesFrom6: { type: 'integer', multipleOf: 2.5, minimum: 6 },
    threes: { type: 'integer', multipleOf: 0.3 },
    threeQuarters: { type: 'integer', multipleOf: 0.75, minimum: 1, maximum: 4 },
    negative: { type: 'integer', multipleOf: 1.5, exclusiveMaximum: 0 },
    tenths: { type: 'number', multipleOf: 0.1, minimum: 2.05 },
    cents: { type: 'number', multipleOf: 0.01, exclusiveMinimum: 19.98, maximum: 20 },
    narrow: { type: 'number', multipleOf: 0.1, minimum: 0.25, maximum: 0.35 },
    tiny: { type: 'number', multipleOf: 1e-7, exclusiveMinimum: 0, maximum: 1e-6 },
  };
  const schema = { type: 'object', properties: cases, required: Object.keys(cases), additionalProperties: false };
  const declared = compileTools([{ type: 'function', function: { name: 'steps', parameters: schema } }]);
  for (const answer of await schemaAnswers(client, schema, 'steps')) {
    const call = { id: 'c', type: 'function' as const, function: { name: 'steps', arguments: JSON.stringify(answer) } };
    assert.equal(declared.check(call, 0)?.message, undefined, JSON.stringify(answer));
    for (const [name, { type }] of Object.entries(cases)) if (type === 'integer') assert.ok(Number.isInteger((answer as Record<string, number>)[name]), name);
    // The decimal a model writes, not the double k × step lands on (0.30000000000000004).
    assert.deepEqual([(answer as Record<string, number>).narrow, (answer as Record<string, number>).tenths], [0.3, 2.1]);
  }
});

test("the mock's answers to an allOf satisfy every part at once (a bound in one part and the type in another, a property one part requires of the other's object, a property both bound), where it sampled each part alone and merged the values ({} for an integer): each answer passes svc's own check of the schema", async (t) => {
  const client = await mockClient(t);
  const cases: Record<string, Record<string, unknown>> = {
    bounded: { allOf: [{ type: 'integer' }, { minimum: 5 }] },
    required: { allOf: [{ $ref: '#/definitions/pair' }, { required: ['b'] }] },
    both: { allOf: [{ type: 'object', properties: { n: { type: 'number', minimum: 2 } }, required: ['n'] }, { properties: { n: { maximum: 2.5, exclusiveMinimum: 2 } } }] },
    objects: { allOf: [{ type: 'object', properties: { a: { type: 'string' } }, required: ['a'] }, { type: 'object', properties: { c: { type: 'boolean' } }, required: ['c'] }] },
  };
  const schema = {
    type: 'object',
    properties: cases,
    required: Object.keys(cases),
    definitions: { pair: { type: 'object', properties: { a: { type: 'string' }, b: { type: 'string', minLength: 9 } }, required: ['a'] } },
  };
  const declared = compileTools([{ type: 'function', function: { name: 'parts', parameters: schema } }]);
  for (const answer of await schemaAnswers(client, schema, 'parts')) {
    const call = { id: 'c', type: 'function' as const, function: { name: 'parts', arguments: JSON.stringify(answer) } };
    assert.equal(declared.check(call, 0)?.message, undefined, JSON.stringify(answer));
  }
});

test("the mock's answers to a 2019-09 or 2020-12 schema keep the keywords beside a $ref (a minimum, a required property, bounds along a chain of $refs), which those drafts apply and it dropped, so svc refused its own answer; to a draft-07 one they ignore them, as draft-07 and svc's check of it do", async (t) => {
  const client = await mockClient(t);
  const refs = (definitions: string, beside: Record<string, Record<string, unknown>>) => ({
    type: 'object',
    properties: Object.fromEntries(Object.entries(beside).map(([name, keywords]) => [name, { $ref: `#/${definitions}/${name}`, ...keywords }])),
    required: Object.keys(beside),
    [definitions]: {
      count: { type: 'integer' },
      pair: { type: 'object', properties: { a: { type: 'string' }, b: { type: 'string' } }, required: ['a'] },
      chain: { $ref: `#/${definitions}/count`, minimum: -10 },
    },
  });
  const applying = refs('$defs', { count: { minimum: 5 }, pair: { required: ['b'] }, chain: { maximum: -3 } });
  // Keywords that contradict their $ref's target: applied, the answer would break the target, which draft-07 keeps.
  const ignoring = refs('definitions', { count: { enum: ['x'] }, pair: { properties: { a: { type: 'integer' } } }, chain: { minimum: 0 } });
  const schemas = [
    { ...applying, $schema: 'https://json-schema.org/draft/2019-09/schema' },
    { ...applying, $schema: 'https://json-schema.org/draft/2020-12/schema' },
    ignoring,
    { ...ignoring, $schema: 'http://json-schema.org/draft-07/schema#' },
  ];
  for (const schema of schemas) {
    const declared = compileTools([{ type: 'function', function: { name: 'refs', parameters: schema } }]);
    for (const answer of await schemaAnswers(client, schema, 'refs')) {
      const call = { id: 'c', type: 'function' as const, function: { name: 'refs', arguments: JSON.stringify(answer) } };
      assert.equal(declared.check(call, 0)?.message, undefined, `${String(schema.$schema)}: ${JSON.stringify(answer)}`);
    }
  }
});

test("the mock's answers to a recursive 2020-12 or 2019-09 schema follow its $dynamicRef or $recursiveRef (to the $dynamicAnchor or $recursiveAnchor it names, else the schema of the last $ref, as svc's check does), where it wrote a string for the subtree and svc refused its own answer; in draft-07, which has neither, they are not followed", async (t) => {
  const client = await mockClient(t);
  const node = (recurse: Record<string, unknown>) => ({
    type: 'object',
    properties: { label: { type: 'string' }, children: { type: 'array', items: recurse } },
    required: ['label', 'children'],
  });
  const inDefs = (dialect: string, tree: Record<string, unknown>) => ({ $schema: dialect, type: 'object', properties: { tree: { $ref: '#/$defs/tree' } }, required: ['tree'], $defs: { tree } });
  const draft2020 = 'https://json-schema.org/draft/2020-12/schema';
  const draft2019 = 'https://json-schema.org/draft/2019-09/schema';
  const schemas: Record<string, Record<string, unknown>> = {
    dynamicAtRoot: { $schema: draft2020, $dynamicAnchor: 'node', ...node({ $dynamicRef: '#node' }) },
    dynamicInDefs: inDefs(draft2020, { $dynamicAnchor: 'node', ...node({ $dynamicRef: '#node' }) }),
    dynamicPointer: inDefs(draft2020, node({ $dynamicRef: '#/$defs/tree' })),
    recursiveAtRoot: { $schema: draft2019, $recursiveAnchor: true, ...node({ $recursiveRef: '#' }) },
    recursiveInDefs: inDefs(draft2019, { $recursiveAnchor: true, ...node({ $recursiveRef: '#' }) }),
    // An unknown keyword in draft-07: the type beside it holds.
    draft07: { type: 'object', properties: { n: { $dynamicRef: '#/definitions/count', type: 'string' } }, required: ['n'], definitions: { count: { type: 'integer' } } },
  };
  for (const [name, schema] of Object.entries(schemas)) {
    const declared = compileTools([{ type: 'function', function: { name, parameters: schema } }]);
    for (const answer of await schemaAnswers(client, schema, name)) {
      const call = { id: 'c', type: 'function' as const, function: { name, arguments: JSON.stringify(answer) } };
      assert.equal(declared.check(call, 0)?.message, undefined, `${name}: ${JSON.stringify(answer)}`);
    }
  }
});
