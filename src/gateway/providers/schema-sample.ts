/**
 * A value that satisfies a JSON Schema, for the mock provider's tool-call arguments and structured outputs: required
 * properties with type-appropriate values, the first enum value, `const`, `default` and `examples` when given,
 * lengths and bounds respected, local `$ref`s resolved, pointers and anchors' names alike (with the keywords beside them where the schema's dialect
 * applies those), `$dynamicRef`s and `$recursiveRef`s as svc's check resolves them, an `allOf`'s parts merged,
 * `nullable: true` beside a `type` as a null it allows, a string matching the `pattern` when pattern-sample.ts can
 * write one.
 */
import { anchorIdKeyword, keywordsBesideRefApply, patternRegExp } from '../tool-schemas.ts';
import { sampleFromPattern } from './pattern-sample.ts';
import { isSchema, localAnchors, localRefTarget, type Schema } from '../subschemas.ts';
import { mergeSchemas } from './schema-merge.ts';

/**
 * Past SHALLOW_DEPTH an array holds only the items it must and a union takes its null option if it has one, so that a
 * recursive schema (a tree whose children are its own `$ref`) ends in `[]` or `null`, as it allows, well before
 * MAX_DEPTH, where a value is cut off as null whatever the schema says.
 */
const SHALLOW_DEPTH = 8;
const MAX_DEPTH = 32;

/** The schema being sampled, how its dialect reads references, and where the sampling is in it. */
interface Document {
  root: Schema;
  /** The schemas a `$ref` of `#name` names (localAnchors): a `$ref: "#node"` was sampled as null. */
  localAnchors: ReadonlyMap<string, Schema>;
  /**
   * 2019-09 and later: the keywords beside a `$ref` apply with its target, and `$dynamicRef` and `$recursiveRef` are
   * references too; draft-07 and earlier: the keywords beside a `$ref` are ignored, and those two are unknown.
   */
  keywordsBesideRef: boolean;
  /**
   * The schemas entered so far that declare a `$dynamicAnchor` (a `$recursiveAnchor: true` as the anchor ""), the
   * first of each name, for the whole sampling: as ajv keeps them for a whole validation.
   */
  anchors: Map<string, Schema>;
  /** The target of the last reference followed, the root before any. */
  scope: Schema;
}

/** Notes the anchor a schema entered declares, unless one of its name was entered before (ajv keeps the outermost). */
function enter(schema: Schema, doc: Document): void {
  if (!doc.keywordsBesideRef) return;
  const anchor = typeof schema.$dynamicAnchor === 'string' ? schema.$dynamicAnchor : schema.$recursiveAnchor === true ? '' : undefined;
  if (anchor !== undefined && !doc.anchors.has(anchor)) doc.anchors.set(anchor, schema);
}

type Reference = '$ref' | '$dynamicRef' | '$recursiveRef';

/** The reference keyword a schema holds that its dialect follows, if any. */
function referenceOf(schema: Schema, doc: Document): Reference | undefined {
  if (typeof schema.$ref === 'string') return '$ref';
  if (!doc.keywordsBesideRef) return undefined;
  if (typeof schema.$dynamicRef === 'string') return '$dynamicRef';
  return typeof schema.$recursiveRef === 'string' ? '$recursiveRef' : undefined;
}

/**
 * The schema a reference leads to. A `$dynamicRef` or `$recursiveRef` (`#name`, `#` for a `$recursiveRef`) leads, as
 * in svc's check (ajv), to the schema entered first that declares the anchor it names, else to the scope: ajv calls
 * back the function it is in, one of its own for each `$ref` target, and reads a `#/...` pointer there as an anchor's
 * name, which none has.
 */
function targetOf(reference: Reference, ref: string, doc: Document, scope: Schema): Schema | undefined {
  if (reference === '$ref') return localRefTarget(doc.root, ref, doc.localAnchors);
  return ref.startsWith('#') ? (doc.anchors.get(ref.slice(1)) ?? scope) : undefined;
}

/** A sample of each string `format` the sampler knows; a Map, so a format named `toString` finds no inherited member. */
const FORMATTED = new Map([
  ['date-time', '2025-01-01T00:00:00Z'],
  ['date', '2025-01-01'],
  ['time', '00:00:00Z'],
  ['email', 'user@example.com'],
  ['uri', 'https://example.com/'],
  ['url', 'https://example.com/'],
  ['uuid', '00000000-0000-4000-8000-000000000000'],
  ['hostname', 'example.com'],
  ['ipv4', '192.0.2.1'],
  ['ipv6', '2001:db8::1'],
]);

function sampleString(schema: Schema, name: string): string {
  let value = (typeof schema.format === 'string' && FORMATTED.get(schema.format)) || (name ? `sample ${name}` : 'sample');
  const min = typeof schema.minLength === 'number' ? schema.minLength : 0;
  const max = typeof schema.maxLength === 'number' ? schema.maxLength : Infinity;
  while (value.length < min) value += 'x';
  if (value.length > max) value = value.slice(0, Math.max(min, max));
  if (typeof schema.pattern !== 'string') return value;
  // The pattern wins over the lengths: a format's sample that matches it is kept, else one written from it.
  try {
    if (patternRegExp(schema.pattern, 'u').test(value)) return value;
  } catch {
    return value;
  }
  return sampleFromPattern(schema.pattern) ?? value;
}

/** A number schema no value satisfies (an integer between exclusive bounds 1 and 2): the sampler has nothing to write. */
export class UnsatisfiableSchemaError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnsatisfiableSchemaError';
  }
}

/** The bound and whether it is exclusive: draft-06 on writes an exclusive one on its own, draft-04 flags `minimum`. */
function bound(schema: Schema, inclusive: 'minimum' | 'maximum', exclusive: 'exclusiveMinimum' | 'exclusiveMaximum'): [number | undefined, number | undefined] {
  const value = typeof schema[inclusive] === 'number' ? schema[inclusive] : undefined;
  if (schema[exclusive] === true) return [undefined, value];
  return [value, typeof schema[exclusive] === 'number' ? schema[exclusive] : undefined];
}

/** The numbers a schema's bounds allow: from `low` to `high` (infinite where unbounded), each end open or closed. */
interface NumberRange {
  low: number;
  lowOpen: boolean;
  high: number;
  highOpen: boolean;
}

/** The range within a schema's bounds, the tighter of an inclusive and an exclusive bound where it has both. */
function numberRange(schema: Schema): NumberRange {
  const [min, exclusiveMin] = bound(schema, 'minimum', 'exclusiveMinimum');
  const [max, exclusiveMax] = bound(schema, 'maximum', 'exclusiveMaximum');
  const lowOpen = exclusiveMin !== undefined && (min === undefined || exclusiveMin >= min);
  const highOpen = exclusiveMax !== undefined && (max === undefined || exclusiveMax <= max);
  return { low: lowOpen ? exclusiveMin! : (min ?? -Infinity), lowOpen, high: highOpen ? exclusiveMax! : (max ?? Infinity), highOpen };
}

function inRange(value: number, range: NumberRange): boolean {
  return (range.lowOpen ? value > range.low : value >= range.low) && (range.highOpen ? value < range.high : value <= range.high);
}

/**
 * A number in the range: `preferred` when inside, else the middle of a range bounded at both ends (bounds less than 1
 * apart leave no room for a fixed step in from either), else its one bound, or 1 in from it when open.
 */
function pointIn(range: NumberRange, preferred: number): number | undefined {
  if (inRange(preferred, range)) return preferred;
  const bounded = Number.isFinite(range.low) && Number.isFinite(range.high);
  const value = bounded
    ? range.low + (range.high - range.low) / 2
    : Number.isFinite(range.low)
      ? range.low + (range.lowOpen ? 1 : 0)
      : range.high - (range.highOpen ? 1 : 0);
  return inRange(value, range) ? value : undefined;
}

/** A step as a fraction of whole numbers in lowest terms. */
interface Fraction {
  numerator: number;
  denominator: number;
}

const gcd = (a: bigint, b: bigint): bigint => (b === 0n ? a : gcd(b, a % b));

/**
 * `step` as the fraction its shortest decimal spelling says (0.3 is 3/10, 2.5 is 5/2, 1e-7 is 1/10000000): a
 * `multipleOf` is written in decimal, and its double is only near that decimal, so multiples are counted from it.
 */
function decimalFraction(step: number): Fraction {
  const [, whole, fraction = '', exponent = '0'] = /^(\d+)(?:\.(\d+))?(?:e([+-]?\d+))?$/.exec(String(step))!;
  const shift = Number(exponent) - fraction.length;
  let numerator = BigInt(whole + fraction) * 10n ** BigInt(Math.max(shift, 0));
  let denominator = 10n ** BigInt(Math.max(-shift, 0));
  const common = gcd(numerator, denominator);
  numerator /= common;
  denominator /= common;
  return { numerator: Number(numerator), denominator: Number(denominator) };
}

/**
 * A multiple of `step` in the range: the first at or above `preferred` (or the low end), else the last below the high
 * end. The k-th multiple is k·numerator/denominator, the double nearest that decimal, as a model would write it
 * (k·step is 0.30000000000000004 for 3 × 0.1).
 */
function multipleIn(range: NumberRange, step: Fraction, preferred: number): number | undefined {
  const { numerator, denominator } = step;
  const up = Math.ceil((Math.max(preferred, range.low) * denominator) / numerator);
  const down = Math.floor((Math.min(preferred, range.high) * denominator) / numerator);
  // The next multiple along too: the first one may be an open end itself.
  return [up, up + 1, down, down - 1].map((k) => (k * numerator) / denominator).find((value) => inRange(value, range));
}

function sampleNumber(schema: Schema, integer: boolean, name: string): number {
  const range = numberRange(schema);
  const multipleOf = typeof schema.multipleOf === 'number' && schema.multipleOf > 0 ? decimalFraction(schema.multipleOf) : undefined;
  // An integer's multiples of n/d in lowest terms are the multiples of n: of 0.5 every integer, of 2.5 those of 5.
  const step = integer ? { numerator: multipleOf?.numerator ?? 1, denominator: 1 } : multipleOf;
  const value = step === undefined ? pointIn(range, 1.5) : multipleIn(range, step, integer ? 1 : 1.5);
  if (value !== undefined) return value;
  const stepValue = step && step.numerator / step.denominator;
  const what = step === undefined ? 'number' : integer && stepValue === 1 ? 'integer' : `multiple of ${stepValue}`;
  const low = Number.isFinite(range.low) ? ` ${range.lowOpen ? 'above' : 'from'} ${range.low}` : '';
  const high = Number.isFinite(range.high) ? ` ${range.highOpen ? 'below' : 'up to'} ${range.high}` : '';
  throw new UnsatisfiableSchemaError(`no ${what} lies${low}${low && high ? ' and' : ''}${high}${name ? ` (${name})` : ''}`);
}

/**
 * The schema a reference stands for, followed until it holds none, as svc's check reads it (tool-schemas.ts): its
 * target alone in draft-07 and earlier, its target and the keywords beside it together in 2019-09 and later (a
 * `minimum` or a `required` beside it was dropped, and the answer refused); with the document as of there, the last
 * target its scope. Undefined where a reference resolves to nothing (not local) or a chain of them goes on past
 * MAX_DEPTH.
 */
function dereferenced(schema: Schema, doc: Document): [Schema, Document] | undefined {
  let current = schema;
  let scope = doc.scope;
  for (let hops = 0; ; hops += 1) {
    const reference = referenceOf(current, doc);
    if (!reference) return [current, scope === doc.scope ? doc : { ...doc, scope }];
    const { [reference]: ref, ...beside } = current;
    const target = hops < MAX_DEPTH ? targetOf(reference, ref as string, doc, scope) : undefined;
    if (!target) return undefined;
    enter(target, doc);
    scope = target;
    current = doc.keywordsBesideRef ? mergeSchemas(target, beside) : target;
  }
}

/**
 * A schema's `type`, with `null` added where OpenAPI 3.0's `nullable: true` stands beside it, as svc's check reads it
 * (openapi-nullable.ts): a recursive schema of OpenAPI's shape (a list whose `next` is a nullable object) ends in null
 * past SHALLOW_DEPTH, where it went on to MAX_DEPTH and its null fell where the schema allows none.
 */
const typeWithNull = (schema: Schema): unknown =>
  schema.nullable === true && schema.type !== undefined ? [...[schema.type].flat(), 'null'] : schema.type;

/** Sets an own, enumerable member, `__proto__` included (assigned, it would set the object's prototype instead). */
const setOwn = (object: Record<string, unknown>, key: string, value: unknown): void => {
  Object.defineProperty(object, key, { value, enumerable: true, writable: true, configurable: true });
};

function sample(schema: unknown, doc: Document, name: string, depth: number): unknown {
  if (!isSchema(schema) || depth > MAX_DEPTH) return null;
  enter(schema, doc);
  if (referenceOf(schema, doc)) {
    const target = dereferenced(schema, doc);
    return target ? sample(target[0], target[1], name, depth + 1) : null;
  }
  if ('const' in schema) return schema.const;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  if ('default' in schema && schema.default !== undefined) return schema.default;
  if (Array.isArray(schema.examples) && schema.examples.length > 0) return schema.examples[0];
  for (const key of ['anyOf', 'oneOf'] as const) {
    const options = schema[key];
    if (Array.isArray(options) && options.length > 0) {
      const isNull = (option: unknown) => isSchema(option) && option.type === 'null';
      const preferred = (depth >= SHALLOW_DEPTH ? options.find(isNull) : undefined) ?? options.find((option) => !isNull(option)) ?? options[0];
      return sample(preferred, doc, name, depth + 1);
    }
  }
  if (Array.isArray(schema.allOf) && schema.allOf.length > 0) {
    // One value satisfies every part: sampled from their merged schema, not merged from values each part allows alone.
    const { allOf, ...beside } = schema;
    let merged: Schema = beside;
    for (const part of allOf) {
      const resolved = isSchema(part) ? dereferenced(part, doc) : undefined;
      if (resolved) merged = mergeSchemas(merged, resolved[0]);
    }
    return sample(merged, doc, name, depth + 1);
  }
  let type = typeWithNull(schema);
  if (Array.isArray(type)) type = (depth >= SHALLOW_DEPTH && type.includes('null') ? 'null' : type.find((t) => t !== 'null')) ?? type[0];
  if (type === undefined) type = isSchema(schema.properties) ? 'object' : schema.items !== undefined ? 'array' : 'string';
  switch (type) {
    case 'object': {
      // Members are the schema's and the value's own only: a property may be named `toString`, `constructor` or
      // `__proto__` (svc's check counts own members only), which plain reads, `in` and assignment take as inherited.
      const out: Record<string, unknown> = {};
      const properties = isSchema(schema.properties) ? schema.properties : {};
      const propertySchema = (key: string): unknown => (Object.hasOwn(properties, key) ? properties[key] : {});
      const required = Array.isArray(schema.required) ? schema.required.filter((k): k is string => typeof k === 'string') : [];
      for (const key of required) setOwn(out, key, sample(propertySchema(key), doc, key, depth + 1));
      const minProperties = typeof schema.minProperties === 'number' ? schema.minProperties : 0;
      for (const key of Object.keys(properties)) {
        if (Object.keys(out).length >= minProperties) break;
        if (!Object.hasOwn(out, key)) setOwn(out, key, sample(properties[key], doc, key, depth + 1));
      }
      return out;
    }
    case 'array': {
      const minItems = typeof schema.minItems === 'number' ? schema.minItems : 0;
      const count = depth >= SHALLOW_DEPTH ? minItems : Math.max(minItems, schema.maxItems === 0 ? 0 : 1);
      const prefix = Array.isArray(schema.prefixItems) ? schema.prefixItems : [];
      return Array.from({ length: Math.max(count, prefix.length) }, (_, i) =>
        sample(prefix[i] ?? schema.items ?? {}, doc, name, depth + 1),
      );
    }
    case 'integer':
      return sampleNumber(schema, true, name);
    case 'number':
      return sampleNumber(schema, false, name);
    case 'boolean':
      return true;
    case 'null':
      return null;
    default:
      return sampleString(schema, name);
  }
}

/**
 * A value valid against `schema` (for the schemas tools and structured outputs declare in practice). Throws
 * UnsatisfiableSchemaError where a number it must write has none its bounds allow.
 */
export function sampleFromSchema(schema: unknown): unknown {
  const root = isSchema(schema) ? schema : {};
  const doc = { root, localAnchors: localAnchors(root, anchorIdKeyword(root)), keywordsBesideRef: keywordsBesideRefApply(root), anchors: new Map(), scope: root };
  return sample(schema ?? {}, doc, '', 0);
}
