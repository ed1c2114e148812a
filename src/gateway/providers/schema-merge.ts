/**
 * One schema asking what each of two asks, for the mock's sampler (schema-sample.ts), which writes one value for a
 * value that must satisfy both: an `allOf`'s parts, and in 2019-09 and later a `$ref`'s target and the keywords
 * beside it. Sampling each alone and merging the values wrote `{}` for `allOf: [{type: integer}, {minimum: 5}]` and
 * left out the property one part requires of the other's object.
 */
import { canonicalJson } from '../../core/canonical-json.ts';
import { isSchema, type Schema } from '../subschemas.ts';

/** Bounds: the tighter of the two holds for both (draft-04's boolean exclusive flags: excluded if either excludes). */
const LOWER_BOUNDS = new Set(['minimum', 'exclusiveMinimum', 'minLength', 'minItems', 'minProperties', 'minContains']);
const UPPER_BOUNDS = new Set(['maximum', 'exclusiveMaximum', 'maxLength', 'maxItems', 'maxProperties', 'maxContains']);
/** Keywords holding one subschema: where both give one, the value there satisfies both. */
const SUBSCHEMA = new Set(['items', 'additionalItems', 'additionalProperties', 'contains', 'propertyNames', 'unevaluatedItems', 'unevaluatedProperties']);
/** Keywords holding subschemas by name: where both name one, the value there satisfies both. */
const SUBSCHEMAS_BY_NAME = new Set(['properties', 'patternProperties', 'dependentSchemas', '$defs', 'definitions']);

/** A subschema satisfying both, left as an `allOf` the sampler merges when it gets there (a recursive schema's would not end). */
const both = (first: unknown, second: unknown): unknown => ({ allOf: [first, second] });

const types = (type: unknown): unknown[] => (Array.isArray(type) ? type : [type]);

/** The types both allow: an integer is a number. */
function commonTypes(first: unknown, second: unknown): unknown {
  const allowed = (type: unknown, of: unknown) => types(of).includes(type) || (type === 'integer' && types(of).includes('number'));
  const common = [...types(first).filter((type) => allowed(type, second)), ...types(second).filter((type) => type === 'integer' && allowed(type, first))];
  const unique = [...new Set(common)];
  // None in common: no value satisfies both, and the second's is as good as any.
  return unique.length === 0 ? second : unique.length === 1 ? unique[0] : unique;
}

function mergeKeyword(key: string, first: unknown, second: unknown): unknown {
  if (LOWER_BOUNDS.has(key) || UPPER_BOUNDS.has(key)) {
    if (typeof first === 'boolean' || typeof second === 'boolean') return first === true || second === true;
    if (typeof first === 'number' && typeof second === 'number') return LOWER_BOUNDS.has(key) ? Math.max(first, second) : Math.min(first, second);
  }
  if (key === 'type') return commonTypes(first, second);
  if (key === 'required' && Array.isArray(first) && Array.isArray(second)) return [...new Set([...first, ...second])];
  if (key === 'enum' && Array.isArray(first) && Array.isArray(second)) {
    const allowed = new Set(second.map(canonicalJson));
    return first.filter((value) => allowed.has(canonicalJson(value)));
  }
  if (key === 'allOf' && Array.isArray(first) && Array.isArray(second)) return [...first, ...second];
  if (key === 'prefixItems' && Array.isArray(first) && Array.isArray(second)) {
    return Array.from({ length: Math.max(first.length, second.length) }, (_, i) => (i < first.length && i < second.length ? both(first[i], second[i]) : (first[i] ?? second[i])));
  }
  if (SUBSCHEMA.has(key)) return both(first, second);
  if (SUBSCHEMAS_BY_NAME.has(key) && isSchema(first) && isSchema(second)) {
    const merged: Schema = { ...first };
    for (const [name, schema] of Object.entries(second)) merged[name] = name in first ? both(first[name], schema) : schema;
    return merged;
  }
  // Anything else (a format, a pattern, a default, a description): the second's, the more specific where it is a `$ref`'s sibling.
  return second;
}

/**
 * The schema of the values both `first` and `second` allow, as far as the sampler reads them. `second` holds no
 * `$ref` (the sampler resolves one first); one in `first` stays, to be followed with the keywords merged beside it
 * (a 2019-09 `$ref`'s target that is itself a `$ref` with keywords beside it). Not exact where no keyword-wise merge is: two `anyOf`s, two `pattern`s,
 * two `multipleOf`s keep the second's.
 */
export function mergeSchemas(first: Schema, second: Schema): Schema {
  const merged: Schema = { ...first };
  for (const [key, value] of Object.entries(second)) merged[key] = key in first ? mergeKeyword(key, first[key], value) : value;
  return merged;
}
