/**
 * A draft-07 (draft-06, draft-04) schema as those drafts read a `$ref`: "all other properties in a "$ref" object MUST
 * be ignored" (draft-07 8.3). ajv's `ignoreKeywordsWithRef` ignored them but for those it reads before it looks at
 * the option: a `type` beside a `$ref` was still checked (`{"$ref": "#/definitions/count", "type": "string"}` refused
 * both 1 and "x"), a `nullable` without `type` failed to compile, and an `$id` moved the base the `$ref` resolves
 * against. So ajv compiles a copy in which a subschema with a `$ref` holds nothing else it could apply.
 */
import type { Schema } from './subschemas.ts';

/**
 * What stays beside a `$ref`: the dialect (`$schema`, at the root) and the definitions a JSON Pointer elsewhere may
 * point into (zod-to-json-schema writes its root as a `$ref` beside the `definitions` it names; `$defs` is no
 * draft-07 keyword, but a pointer into it resolved, and still does). None of them applies anything to a value. A
 * pointer into another keyword beside a `$ref` (`#/properties/a/properties/b` where `a` has a `$ref`) no longer
 * resolves: it points into what the draft says is ignored.
 */
const KEPT_BESIDE_REF = new Set(['$ref', '$schema', 'definitions', '$defs']);

/**
 * Cuts one schema object with a `$ref` down to KEPT_BESIDE_REF, in place; whether it has one. Made to every subschema
 * of the copy ajv compiles (`changedCopy`, by Dialect.source in tool-schemas.ts).
 */
export function aloneIfRef(schema: Schema): boolean {
  if (typeof schema.$ref !== 'string') return false;
  for (const keyword of Object.keys(schema)) if (!KEPT_BESIDE_REF.has(keyword)) delete schema[keyword];
  return true;
}
