/**
 * Declared tool schemas, compiled once per request with a real JSON Schema validator (ajv), and the check every
 * complete tool call passes before it is emitted downstream (SPEC 4.2). A schema that does not compile is the
 * client's error (400), never a crash.
 */
import { Ajv, type ErrorObject, type Options, type ValidateFunction } from 'ajv';
import { Ajv2019 } from 'ajv/dist/2019.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import draft06MetaSchema from 'ajv/dist/refs/json-schema-draft-06.json' with { type: 'json' };
import safeRegex from 'safe-regex2';
import { canonicalJson } from '../core/canonical-json.ts';
import { invalid } from '../core/errors.ts';
import { draft04AsDraft06 } from './draft-04.ts';
import { DRAFT_04_META_SCHEMA } from './draft-04-meta-schema.ts';
import { withoutStrayNullable } from './openapi-nullable.ts';
import { aloneIfRef } from './refs-alone.ts';
import { changedCopy, followPointer, subschemas, type Schema } from './subschemas.ts';
import { duplicateNamePath } from '../core/json-duplicate-names.ts';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../core/json-depth.ts';
import type { ChatTool, ChatToolCall } from './providers/types.ts';

/**
 * The `pattern`s of declared schemas are the client's, and so, through its prompt, are the arguments a model writes
 * for them: `^(a+)+$` against forty a's and a '!' backtracks for hours on the event loop every request shares. V8
 * switches to its linear-time engine on excessive backtracking (`--enable-experimental-regexp-engine-on-excessive-
 * backtracks`, set by bin/launch.mjs), but not for patterns with the `u` flag, which ajv gives every pattern. So a
 * pattern is compiled without `u`, unless it uses what only `u` means (`\p{L}`, `\u{1F600}`, characters beyond the
 * BMP); such a one keeps `u` if it nests no quantifier (safe-regex2) and is refused otherwise. The price: without `u`,
 * `.` and a negated class take one UTF-16 unit, so a length-bounded pattern counts an emoji as two characters.
 */
const NEEDS_UNICODE = /\\[pP]\{|\\u\{|[\u{10000}-\u{10FFFF}]/u;

export function patternRegExp(pattern: string, flags: string): RegExp {
  if (!NEEDS_UNICODE.test(pattern)) return new RegExp(pattern, flags.replace('u', ''));
  if (!safeRegex(pattern)) throw new Error(`the pattern ${JSON.stringify(pattern)} needs the u flag and nests quantifiers, so it could backtrack without end`);
  return new RegExp(pattern, flags);
}
// ajv calls it for every `pattern` and `patternProperties`; `code` names it only in standalone code, never made here.
patternRegExp.code = 'patternRegExp';

/**
 * An ajv shared by every tenant's schemas, so nothing of one schema may outlive its compilation inside it:
 * - `addUsedSchema: false` and `removeSchema` after each compilation: by default ajv registers a schema's `$id` for
 *   every later `$ref` and keeps every schema it compiled in its cache, so one tenant's `$id` resolved (and probed,
 *   property by property) in another's schema, and blocked later schemas of that id;
 * - a new instance once the schemas compiled by the current one reach AJV_RECYCLE_NODES: an instance also keeps the
 *   values its generated code refers to (the schemas themselves) for its whole life, which unique schemas grew by
 *   megabytes a request. A validator keeps its instance's values alive only while `compiled` below holds it;
 * - `code.optimize: false`: ajv's optimisation passes over the generated code are what make a schema of many
 *   properties slow to compile (500 properties: 180 ms, 2,000: 1.4 s; without them 34 ms and 250 ms); the validators
 *   run the same checks;
 * - `logger: false`: svc checks no string `format` (ajv knows none without ajv-formats), and ajv wrote "unknown
 *   format ... ignored" to the console, outside svc's log, for every format of every schema compiled;
 * - `multipleOfPrecision`: ajv takes a value as a multiple when value / multipleOf is a whole double, which a decimal
 *   step rarely gives (19.99 / 0.01 is 1998.9999999999998, 0.3 / 0.1 is 2.9999999999999996), so a price of 19.99
 *   was refused for `multipleOf: 0.01`; a quotient within a millionth of a whole number counts as whole (the
 *   rounding error of a quotient stays below that up to ~10^9 steps);
 * - `validateSchema: false`: `compile` checks a schema against its dialect's meta-schema itself, so that its 400 names
 *   where the schema breaks it, and a draft-04 schema against draft-04's, not its draft-06 translation;
 * - `ownProperties: true`: the arguments are a plain object, and ajv took a property as present when reading it gave
 *   anything but undefined, inherited members included, so a `required: ["toString"]` (or `"__proto__"`,
 *   `"constructor"`) let `{}` through and an optional `constructor: {type: "string"}` refused it; now only the
 *   arguments' own members count (one hasOwnProperty call more per named property, in a tool call's check only).
 */
const AJV_OPTIONS: Options = {
  strict: false,
  logger: false,
  allErrors: false,
  validateSchema: false,
  addUsedSchema: false,
  multipleOfPrecision: 6,
  ownProperties: true,
  code: { regExp: patternRegExp, optimize: false },
};
/** A new instance costs ~5 ms (it compiles the meta-schema again): once per this many schema nodes compiled. */
const AJV_RECYCLE_NODES = 5_000;

/**
 * One ajv per JSON Schema dialect a schema may declare in `$schema`: an instance knows its own meta-schema only, and
 * refused any other as "no schema with key or ref", though zod's `z.toJSONSchema()` declares 2020-12 by default and
 * OpenAI takes it. Draft-06 is read by a draft-07 instance given its meta-schema, draft-04 by one too, translated to
 * draft-06 (draft-04.ts, which leaves out the keywords later drafts added); each without draft-07's (`withoutKeywords`).
 */
class Dialect {
  /** Made on the first schema of the dialect (an instance costs ~5 ms and its meta-schemas). */
  private instance: Ajv | undefined;
  private nodes = 0;
  /**
   * `declared` is a schema that declares the dialect as the dialect's ajv checks it against its meta-schema (its
   * `$schema` spelled as that ajv knows it), `translated` the schema of that ajv's dialect it means.
   */
  constructor(
    readonly name: string,
    /** Whether keywords beside a `$ref` apply (2019-09 and later) or are ignored (draft-07 and earlier). */
    readonly keywordsBesideRef: boolean,
    private readonly make: () => Ajv,
    readonly declared: (schema: Schema) => Schema,
    private readonly translated: (schema: Schema) => Schema = declared,
  ) {}
  /**
   * What the dialect's ajv compiles for a schema: where keywords beside a `$ref` are ignored, without them
   * (refs-alone.ts), and without a `nullable` that adds null to no `type` (openapi-nullable.ts): both edits made in one
   * copy, one walk.
   */
  source(schema: Schema): Schema {
    const edit = this.keywordsBesideRef ? withoutStrayNullable : refAloneWithoutStrayNullable;
    return withRootId(changedCopy(this.translated(schema), edit));
  }
  /** The instance to compile a schema of `nodes` nodes with, a new one past AJV_RECYCLE_NODES. */
  take(nodes: number): Ajv {
    if (!this.instance || this.nodes + nodes > AJV_RECYCLE_NODES) {
      this.instance = this.make();
      this.nodes = 0;
    }
    this.nodes += nodes;
    return this.instance;
  }
}

/** Both edits of a dialect whose `$ref` stands alone; a subschema cut down to its `$ref` has no `nullable` left. */
const refAloneWithoutStrayNullable = (schema: Schema): boolean => aloneIfRef(schema) || withoutStrayNullable(schema);

/**
 * The base URI a schema without a root `$id` is compiled under. ajv resolves a `$ref` of the whole schema (`"#"`, how a
 * recursive schema names itself: OpenAI's own example of a recursive structured output does) against the schema's
 * registered root, and with `addUsedSchema: false` (AJV_OPTIONS) a root without an `$id` has none: such a schema was a
 * 400 "can't resolve reference # from id #". Given this one, every reference resolves as before (relative ones
 * against it, as against none), and nothing is registered under it (`addUsedSchema: false`; `removeSchema` after each
 * compilation), so one tenant's schema never reaches another's through it. `.invalid` names no host (RFC 2606).
 */
const ROOT_ID = 'https://svc.invalid/schema.json';

/** The schema with a root `$id` (ROOT_ID) when it has none. */
const withRootId = (schema: Schema): Schema => (schema.$id === undefined ? { $id: ROOT_ID, ...schema } : schema);

/** The schema with `$schema` spelled as ajv knows its dialect's meta-schema, the one spelling ajv takes. */
const declaring = (metaSchema: string) => (schema: Schema): Schema =>
  schema.$schema === undefined || schema.$schema === metaSchema ? schema : { ...schema, $schema: metaSchema };

/**
 * The validation keywords draft-07 added over draft-06. In a draft-06 schema they are unknown keywords, which JSON
 * Schema ignores (and ajv, `strict: false`), but ajv reads draft-06 with its draft-07 vocabulary: `if`/`then`/`else`
 * were checked in a draft-06 schema, and svc refused the tool calls it allows. (Draft-04's translation leaves out
 * every keyword later drafts added.)
 */
const ADDED_IN_DRAFT_07 = ['if', 'then', 'else'];

const DRAFT_04 = 'http://json-schema.org/draft-04/schema#';

/**
 * An ajv of a dialect's class, without the keyword `id`. `id` is draft-04's `$id`, and an unknown keyword in draft-06
 * and later, which JSON Schema ignores; ajv keeps one in its vocabulary only to throw "NOT SUPPORTED: keyword "id",
 * use "$id"" when it compiles a schema that has it, and svc refused such schemas with that 400, naming no place.
 * Draft-04's translation turns its `id`s into `$id`s before ajv sees them.
 */
const newAjv = (Class: new (options: Options) => Ajv): Ajv => new Class(AJV_OPTIONS).removeKeyword('id');

/** A draft-07 ajv that also knows draft-06's meta-schema, without `keywords`. */
const withoutKeywords = (keywords: readonly string[]) => (): Ajv => {
  const ajv = newAjv(Ajv).addMetaSchema(draft06MetaSchema);
  for (const keyword of keywords) ajv.removeKeyword(keyword);
  return ajv;
};

const draft07 = new Dialect('draft-07', false, () => newAjv(Ajv), declaring('http://json-schema.org/draft-07/schema#'));
/**
 * The dialects by their meta-schema's URI without its scheme and trailing `#`. json-schema.org names draft-04 to
 * draft-07 by http and 2019-09 and 2020-12 by https, with and without `#`, and serves each in both schemes: users
 * write either, and a schema declaring https://json-schema.org/draft-07/schema# means draft-07.
 */
const dialects = new Map<string, Dialect>([
  ['json-schema.org/draft/2020-12/schema', new Dialect('2020-12', true, () => newAjv(Ajv2020), declaring('https://json-schema.org/draft/2020-12/schema'))],
  ['json-schema.org/draft/2019-09/schema', new Dialect('2019-09', true, () => newAjv(Ajv2019), declaring('https://json-schema.org/draft/2019-09/schema'))],
  ['json-schema.org/draft-07/schema', draft07],
  ['json-schema.org/draft-06/schema', new Dialect('draft-06', false, withoutKeywords(ADDED_IN_DRAFT_07), declaring('http://json-schema.org/draft-06/schema#'))],
  // Checked against draft-04's meta-schema, which ajv reads as any draft-04 schema: translated (its multipleOf > 0).
  [
    'json-schema.org/draft-04/schema',
    new Dialect('draft-04', false, () => withoutKeywords(ADDED_IN_DRAFT_07)().addMetaSchema(draft04AsDraft06(DRAFT_04_META_SCHEMA)), declaring(DRAFT_04), draft04AsDraft06),
  ],
]);
const DIALECT_URI = /^https?:\/\/(.*?)#?$/;

/** The dialect a `$schema` value names, if svc reads it. */
const dialectNamed = (declared: unknown): Dialect | undefined =>
  typeof declared === 'string' ? dialects.get(DIALECT_URI.exec(declared)?.[1] ?? '') : undefined;

/**
 * Whether the keywords beside a `$ref` apply in the dialect a schema declares (2019-09 and later) or are ignored
 * (draft-07 and earlier, and a schema declaring none), as svc's check of it reads them: for the mock's sampler, whose
 * answers pass that check. A `$schema` svc does not read counts as draft-07; `compile` refuses such a schema first.
 */
export const keywordsBesideRefApply = (schema: Schema): boolean => (dialectNamed(schema.$schema) ?? draft07).keywordsBesideRef;

/**
 * The keyword with which a schema names a subschema for a `$ref` of `#name` (beside `$anchor`) in the dialect it
 * declares, as svc's check reads it: `id` in draft-04 (draft-04.ts translates it), `$id` in every other.
 */
export const anchorIdKeyword = (schema: Schema): '$id' | 'id' => (dialectNamed(schema.$schema)?.name === 'draft-04' ? 'id' : '$id');

/** The dialect a schema declares in `$schema`, draft-07 if none; a 400 naming `$schema` for anything else. */
function dialectOf(schema: Schema, where: string): Dialect {
  if (schema.$schema === undefined) return draft07;
  const dialect = dialectNamed(schema.$schema);
  if (dialect) return dialect;
  throw invalid(
    `${where}.$schema is not the URI of a JSON Schema dialect svc reads (2020-12, 2019-09, draft-07, draft-06 or draft-04, such as "https://json-schema.org/draft/2020-12/schema"); leave it out for draft-07.`,
    { param: `${where}.$schema` },
  );
}

/** The dialects in which a subschema with an `$id` may declare a `$schema` of its own (an embedded resource). */
const EMBEDDING_DIALECTS = new Set(['2019-09', '2020-12']);

/**
 * A 400 naming the first `$schema` below the root that declares another dialect than the root's (or none svc reads).
 * svc compiles a schema in one dialect, its root's, and ajv does not read a nested `$schema`: a subschema declaring
 * draft-04 in a draft-07 schema had its boolean `exclusiveMinimum` refused, one declaring 2020-12 had its
 * `prefixItems` ignored. Draft-07 and earlier allow `$schema` at the root only, 2019-09 and later at an embedded
 * resource's root (beside `$id`), to read that resource in its own dialect, which svc does not; one declaring the
 * root's dialect again changes nothing and is taken wherever it is.
 */
function assertOneDialect(schema: Schema, dialect: Dialect, where: string): void {
  for (const [place, subschema] of subschemas(schema)) {
    if (subschema.$schema === undefined) continue;
    const path = place.path();
    const nested = dialectNamed(subschema.$schema);
    if (nested === dialect) continue;
    // Said outright where the schema means an embedded resource, so the 400 is not read as a fault of the schema.
    const embedded = EMBEDDING_DIALECTS.has(dialect.name) && typeof subschema.$id === 'string'
      ? ` ${path.slice(1)} is an embedded resource ($id ${JSON.stringify(subschema.$id)}) of a dialect of its own, which 2019-09 and later allow and svc does not read;`
      : '';
    throw invalid(
      `${where}${path}.$schema ${nested ? `declares ${nested.name}` : 'names no dialect svc reads'}, where the schema's root is read as ${dialect.name}:${embedded} svc reads a schema in its root's dialect throughout, so a $schema below the root may declare that one only; leave it out.`,
      { param: `${where}${path}.$schema` },
    );
  }
}

/**
 * What one request's schemas may hold, counted in nodes (every value of the schema's JSON: objects, arrays, and
 * what they hold). Compiling is synchronous and superlinear in a schema's size (ajv nests a condition per
 * property), on the event loop every request shares: unbounded, one request of 128 tools of 2,000 properties held
 * it for minutes. A tool's schema of real use has tens to a few hundred nodes.
 */
export const MAX_SCHEMA_NODES = 2_000;
export const MAX_REQUEST_SCHEMA_NODES = 16_000;

/**
 * Compiled validators by canonical schema text, so that a client's tools are compiled once, not per request. Bounded
 * by the nodes of the schemas kept (a validator's code grows with its schema: ~0.25 MB for 600 nodes), so hostile
 * traffic of unique schemas cannot grow it past ~12 MB.
 */
const compiled = new Map<string, { validate: ValidateFunction; nodes: number }>();
const MAX_COMPILED_NODES = 30_000;
let compiledNodes = 0;

/** Nodes of a JSON value, counting no further than `limit` (a larger one is refused anyway). */
function nodesOf(value: unknown, limit: number): number {
  let count = 0;
  const pending: unknown[] = [value];
  while (pending.length > 0 && count <= limit) {
    const current = pending.pop();
    count += 1;
    if (Array.isArray(current)) for (const item of current) pending.push(item);
    else if (current !== null && typeof current === 'object') for (const key in current) pending.push((current as Record<string, unknown>)[key]);
  }
  return count;
}

/** A request's budget of schema nodes, spent by each schema it compiles. */
export class SchemaBudget {
  private left = MAX_REQUEST_SCHEMA_NODES;

  /** Count the schema's nodes against the budget (a 400 past it); returns them. */
  spend(schema: Record<string, unknown>, where: string): number {
    const nodes = nodesOf(schema, MAX_SCHEMA_NODES);
    if (nodes > MAX_SCHEMA_NODES) throw invalid(`${where} is too large: a schema may have at most ${MAX_SCHEMA_NODES} nodes (values of its JSON).`, { param: where });
    this.left -= nodes;
    if (this.left < 0) {
      throw invalid(`The request's schemas are too large: together they may have at most ${MAX_REQUEST_SCHEMA_NODES} nodes (values of their JSON).`, { param: where });
    }
    return nodes;
  }
}

/**
 * The 400 of a schema its dialect's meta-schema refuses, naming where in it each fault is: a draft-04 schema's numeric
 * `exclusiveMinimum` (draft-06's meaning) is `tools[0].function.parameters.properties.n.exclusiveMinimum must be boolean`.
 */
function notOfDialect(schema: Schema, dialect: Dialect, where: string, errors: ErrorObject[]): Error {
  const faults = errors.map((error) => `${where}${followPointer(schema, error.instancePath).path} ${error.message}`);
  return invalid(`${where} is not a valid JSON Schema of its dialect, ${dialect.name}: ${[...new Set(faults)].join(', ')}.`, { param: where });
}

/**
 * Forgets every reference ajv registered since `before` was taken. `removeSchema` forgets a schema's root `$id` only,
 * and ajv registers each anchor (`$anchor`, an `$id` of `#name`) under its base, ROOT_ID for every schema without an
 * `$id`: one tenant's `#node` stayed registered, and another's `$ref: "#node"` (with no such anchor, a 400 before)
 * resolved through it to a pointer into its own schema. Only at compile time (validators are kept by schema text).
 */
function forgetRefsSince(ajv: Ajv, before: ReadonlySet<string>): void {
  for (const ref of Object.keys(ajv.refs)) if (!before.has(ref)) delete ajv.refs[ref];
}

function compile(schema: Record<string, unknown>, where: string, budget: SchemaBudget): ValidateFunction {
  const nodes = budget.spend(schema, where);
  const text = canonicalJson(schema);
  const hit = compiled.get(text);
  if (hit) return hit.validate;
  const dialect = dialectOf(schema, where);
  assertOneDialect(schema, dialect, where);
  const ajv = dialect.take(nodes);
  if (!ajv.validateSchema(dialect.declared(schema))) throw notOfDialect(schema, dialect, where, ajv.errors ?? []);
  const source = dialect.source(schema);
  const refsBefore = new Set(Object.keys(ajv.refs));
  let validate: ValidateFunction;
  try {
    validate = ajv.compile(source);
  } catch (error) {
    // ajv names the base it resolved against: the schema's own, not one svc gave it (ROOT_ID).
    const message = (error as Error).message.replaceAll(ROOT_ID, '#');
    throw invalid(`${where} is not a valid JSON Schema: ${message}`, { param: where });
  } finally {
    ajv.removeSchema(source);
    forgetRefsSince(ajv, refsBefore);
  }
  for (const [oldest, entry] of compiled) {
    if (compiledNodes + nodes <= MAX_COMPILED_NODES) break;
    compiled.delete(oldest);
    compiledNodes -= entry.nodes;
  }
  compiled.set(text, { validate, nodes });
  compiledNodes += nodes;
  return validate;
}

export interface ToolCallProblem {
  index: number;
  name: string;
  message: string;
}

export interface DeclaredTools {
  readonly names: ReadonlySet<string>;
  /** Null when the call names a declared tool and its arguments are JSON that satisfies the tool's schema. */
  check(call: ChatToolCall, index: number): ToolCallProblem | null;
  /**
   * Null when the name is a declared tool's: all there is to check of a call the upstream cut off mid-arguments
   * (`max_tokens`), whose arguments are as far as they came, not a call to check or to run.
   */
  checkName(name: string, index: number): ToolCallProblem | null;
}

/**
 * Arguments naming a field twice in one object (`{"to":"x","to":"y"}`): svc checks the value `JSON.parse` keeps, the
 * last, but the client is sent the arguments' text, and its reader may keep the first, a value svc never checked, or
 * refuse the text (Gson, org.json, serde into a struct; src/core/json-duplicate-names.ts). A scan of the text, per
 * checked call only.
 */
export function argumentsNamingTwice(name: string, index: number, text: string): ToolCallProblem | null {
  const path = duplicateNamePath(text);
  return path === null ? null : { index, name, message: `the arguments of "${name}" name ${path.join('.')} twice in one object` };
}

/** The 400 of a tool name declared twice (tool calls name their tool, so each needs its own). */
export function duplicateTool(name: string): Error {
  return invalid(`tools: the name "${name}" is declared more than once; each tool needs a name of its own.`, { param: 'tools' });
}

/**
 * The name a tool is declared under: a responses-wire namespace's tool as `namespace.name` (its call carries both; a
 * tool name has no `.`, so two namespaces' tools of one name stay two tools), any other by its name.
 */
export const declaredToolName = (namespace: string | undefined, name: string): string => (namespace === undefined ? name : `${namespace}.${name}`);

/**
 * The declared name of the namespace's tool a bare `name` stands for where a request names a tool without its
 * namespace (OpenAI's responses-wire `tool_choice` carries a name only): that of the one namespace declaring it,
 * undefined if none does, null if more than one does. It scans the declared names, so callers ask only for a name
 * not declared bare.
 */
export function namespacedToolName(name: string, declared: ReadonlyArray<Iterable<string>>): string | null | undefined {
  if (name.includes('.')) return undefined;
  const suffix = `.${name}`;
  let found: string | undefined;
  for (const names of declared) {
    for (const candidate of names) {
      // A tool name has no `.`, so the namespace is all before the last one.
      if (!candidate.endsWith(suffix) || candidate.lastIndexOf('.') !== candidate.length - suffix.length) continue;
      if (found !== undefined && found !== candidate) return null;
      found = candidate;
    }
  }
  return found;
}

/** The declared name of the tool a responses-wire output item (`function_call`, `custom_tool_call`) calls. */
export const calledToolName = (item: Readonly<Record<string, unknown>>): string =>
  declaredToolName(typeof item.namespace === 'string' ? item.namespace : undefined, String(item.name ?? ''));

/** A deferred tool's schema, compiled only when a call names the tool. */
interface DeferredSchema {
  schema: Record<string, unknown>;
  where: string;
}

/**
 * Compile every declared function tool; throws a 400 for a schema that does not compile, or is too large, and for a
 * name declared twice. The tools of `deferred` (`{tool, where}`, `where` naming its schema in the request: a wire's
 * `defer_loading` catalogue, up to thousands, of which the model loads the few a tool search finds) are declared by name only: each schema is compiled
 * when a call names its tool, so a catalogue costs svc a name each, not a compilation each (nor the request's schema
 * budget, which a call's compilation spends; past it, or not compiling, the call is refused, not the request).
 * `where[i]` names `tools[i]`'s schema as the request wrote it, for a wire whose tools are translated (a refusal of
 * `tools[i].function.parameters`, the chat form, would name a field and an index the client never sent).
 */
export function compileTools(
  tools: readonly ChatTool[] | undefined,
  budget = new SchemaBudget(),
  deferred: ReadonlyArray<{ tool: ChatTool; where: string }> = [],
  where?: readonly string[],
): DeclaredTools {
  const validators = new Map<string, ValidateFunction | null | DeferredSchema>();
  for (const [index, tool] of (tools ?? []).entries()) {
    if (tool.type !== 'function') continue;
    // A call names its tool: of two of one name, svc would check it against the last one's schema only.
    if (validators.has(tool.function.name)) throw duplicateTool(tool.function.name);
    const parameters = tool.function.parameters;
    validators.set(tool.function.name, parameters ? compile(parameters, where?.[index] ?? `tools[${index}].function.parameters`, budget) : null);
  }
  for (const { tool, where } of deferred) {
    if (validators.has(tool.function.name)) throw duplicateTool(tool.function.name);
    const parameters = tool.function.parameters;
    validators.set(tool.function.name, parameters ? { schema: parameters, where } : null);
  }
  const checkName = (name: string, index: number): ToolCallProblem | null =>
    validators.has(name) ? null : { index, name, message: `the model called "${name}", which is not a declared tool` };
  /** The tool's validator, compiling a deferred tool's schema on its first call; a problem if it cannot be. */
  const validatorOf = (name: string, index: number): ValidateFunction | null | ToolCallProblem => {
    const entry = validators.get(name)!;
    if (entry === null || typeof entry === 'function') return entry;
    try {
      const validate = compile(entry.schema, entry.where, budget);
      validators.set(name, validate);
      return validate;
    } catch (error) {
      return { index, name, message: `the call of "${name}" could not be checked: ${(error as Error).message}` };
    }
  };
  return {
    names: new Set(validators.keys()),
    checkName,
    check(call, index) {
      const name = call.function.name;
      const undeclared = checkName(name, index);
      if (undeclared) return undeclared;
      const validate = validatorOf(name, index);
      if (validate !== null && typeof validate !== 'function') return validate;
      let args: unknown;
      try {
        args = JSON.parse(call.function.arguments === '' ? '{}' : call.function.arguments);
      } catch {
        return { index, name, message: `the arguments of "${name}" are not valid JSON` };
      }
      // Bounded like every JSON svc takes from outside (src/core/json-depth.ts): a string escaped the events' bound.
      if (nestsDeeperThan(args, MAX_JSON_DEPTH)) return { index, name, message: `the arguments of "${name}" nest more than ${MAX_JSON_DEPTH} levels deep` };
      const twice = argumentsNamingTwice(name, index, call.function.arguments);
      if (twice) return twice;
      let valid = true;
      try {
        valid = !validate || validate(args);
      } catch {
        // Arguments nested past what the validator's recursion can take (a RangeError): not what the schema allows.
        return { index, name, message: `the arguments of "${name}" could not be checked against its schema` };
      }
      if (!valid) return { index, name, message: `the arguments of "${name}" do not match its schema: ${draft07.take(0).errorsText(validate!.errors)}` };
      return null;
    },
  };
}

/** Compile a `response_format.json_schema.schema` so a malformed one is a 400 before any provider call. */
export function assertCompilableSchema(schema: Record<string, unknown>, where: string, budget = new SchemaBudget()): void {
  compile(schema, where, budget);
}
