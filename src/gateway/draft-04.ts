/**
 * JSON Schema draft-04 schemas (zod's `target: "draft-4"`, hand-written and OpenAPI-3.0-derived ones), read as
 * draft-06 after the two differences of meaning are translated (ajv knows draft-04 only through the ajv-draft-04
 * package, whose validators are ajv's own keywords but for these; the keywords draft-06 and draft-07 added, which
 * ajv-draft-04 reads too, draft-04 does not have, and tool-schemas.ts leaves them out):
 * - `exclusiveMinimum`/`exclusiveMaximum` are booleans that make `minimum`/`maximum` exclusive, where draft-06's are
 *   the exclusive bounds themselves: `{minimum: 1, exclusiveMinimum: true}` becomes `{exclusiveMinimum: 1}`, and a
 *   `false` is dropped. A `true` without its bound is left as it is, for the meta-schema to refuse, as draft-04's does;
 * - `id` is what draft-06 calls `$id` (a base URI, or `#name` for a `$ref`); a `$id` means nothing in draft-04.
 * Only schema positions are translated: a property named `id` stays a property, and an `enum` or `default` value is
 * not a schema.
 */
type Schema = Record<string, unknown>;

const DRAFT_06 = 'http://json-schema.org/draft-06/schema#';

/**
 * Keywords whose value is a schema or an array of schemas; those of later drafts too: they mean nothing in draft-04,
 * but the draft-06 meta-schema the translation is checked against reads `contains` and `propertyNames` as schemas.
 */
const SCHEMA_KEYWORDS = ['items', 'additionalItems', 'additionalProperties', 'not', 'allOf', 'anyOf', 'oneOf', 'contains', 'propertyNames', 'if', 'then', 'else'];
/** Keywords whose value maps names to schemas (a `dependencies` entry may be a list of property names instead). */
const SCHEMA_MAP_KEYWORDS = ['properties', 'patternProperties', 'definitions', 'dependencies'];

const isSchema = (value: unknown): value is Schema => typeof value === 'object' && value !== null && !Array.isArray(value);

/** The draft-06 schema of a draft-04 one, which is left as it was. */
export function draft04AsDraft06(schema: Schema): Schema {
  return { ...translated(schema), $schema: DRAFT_06 };
}

function translated(schema: Schema): Schema {
  const out: Schema = { ...schema };
  delete out.$id;
  if (typeof schema.id === 'string') {
    out.$id = schema.id;
    delete out.id;
  }
  exclusiveBound(out, 'minimum', 'exclusiveMinimum');
  exclusiveBound(out, 'maximum', 'exclusiveMaximum');
  for (const keyword of SCHEMA_KEYWORDS) {
    const value = schema[keyword];
    if (Array.isArray(value)) out[keyword] = value.map((item) => (isSchema(item) ? translated(item) : item));
    else if (isSchema(value)) out[keyword] = translated(value);
  }
  for (const keyword of SCHEMA_MAP_KEYWORDS) {
    const map = schema[keyword];
    if (!isSchema(map)) continue;
    // fromEntries, not assignment: a property may be named `__proto__`.
    out[keyword] = Object.fromEntries(Object.entries(map).map(([name, value]) => [name, isSchema(value) ? translated(value) : value]));
  }
  return out;
}

function exclusiveBound(schema: Schema, bound: 'minimum' | 'maximum', exclusive: 'exclusiveMinimum' | 'exclusiveMaximum'): void {
  if (schema[exclusive] === false) delete schema[exclusive];
  else if (schema[exclusive] === true && typeof schema[bound] === 'number') {
    schema[exclusive] = schema[bound];
    delete schema[bound];
  }
}
