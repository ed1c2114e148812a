/**
 * JSON Schema draft-04 schemas (zod's `target: "draft-4"`, hand-written and OpenAPI-3.0-derived ones), read as
 * draft-06 after the two differences of meaning are translated (ajv knows draft-04 only through the ajv-draft-04
 * package, whose validators are ajv's own keywords but for these). The schema is one draft-04's meta-schema took
 * (draft-04-meta-schema.ts), so its bounds are numbers and its exclusive flags booleans beside them:
 * - `exclusiveMinimum`/`exclusiveMaximum` are booleans that make `minimum`/`maximum` exclusive, where draft-06's are
 *   the exclusive bounds themselves: `{minimum: 1, exclusiveMinimum: true}` becomes `{exclusiveMinimum: 1}`, and a
 *   `false` is dropped;
 * - `id` is what draft-06 calls `$id` (a base URI, or `#name` for a `$ref`); a `$id` means nothing in draft-04;
 * - the keywords draft-06 and draft-07 added are unknown to draft-04, which ignores them, and are left out: kept, the
 *   draft-06 meta-schema refused a draft-04 schema whose `contains`, `propertyNames` or `examples` is no schema or
 *   list (a value draft-04 allows any keyword it does not know), and ajv's vocabulary checked `const` and `if`.
 * Only schema positions are translated: a property named `id` stays a property, and an `enum` or `default` value is
 * not a schema.
 */
import { changedCopy, type SchemaKeywords, type Schema } from './subschemas.ts';

const DRAFT_06 = 'http://json-schema.org/draft-06/schema#';

/** The keywords of draft-04's schema positions: only these are translated. */
const DRAFT_04_KEYWORDS: SchemaKeywords = {
  schemas: ['items', 'additionalItems', 'additionalProperties', 'not', 'allOf', 'anyOf', 'oneOf'],
  maps: ['properties', 'patternProperties', 'definitions', 'dependencies'],
  id: 'id',
};
/** What draft-06 and draft-07 read that draft-04 does not know ($id aside, which is translated). */
const ADDED_AFTER_DRAFT_04 = ['const', 'contains', 'propertyNames', 'examples', 'if', 'then', 'else'];

/** The draft-06 schema of a draft-04 one, which is left as it was. */
export function draft04AsDraft06(schema: Schema): Schema {
  return { ...changedCopy(schema, translate, DRAFT_04_KEYWORDS), $schema: DRAFT_06 };
}

/** Translates one schema object in place (not those below it); counted as a change, so the translation is a copy. */
function translate(schema: Schema): boolean {
  delete schema.$id;
  for (const keyword of ADDED_AFTER_DRAFT_04) delete schema[keyword];
  if (typeof schema.id === 'string') {
    schema.$id = schema.id;
    delete schema.id;
  }
  exclusiveBound(schema, 'minimum', 'exclusiveMinimum');
  exclusiveBound(schema, 'maximum', 'exclusiveMaximum');
  return true;
}

function exclusiveBound(schema: Schema, bound: 'minimum' | 'maximum', exclusive: 'exclusiveMinimum' | 'exclusiveMaximum'): void {
  if (schema[exclusive] === false) delete schema[exclusive];
  else if (schema[exclusive] === true) {
    schema[exclusive] = schema[bound];
    delete schema[bound];
  }
}
