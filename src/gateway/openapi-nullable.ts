/**
 * OpenAPI 3.0's `nullable`, which ajv reads in every dialect (and svc with it: OpenAPI-derived schemas spell a null
 * their model may write so): `nullable: true` adds `null` to the `type` beside it. Anywhere else it means nothing,
 * in OpenAPI 3.0 ("only if `type` is explicitly defined within the same Schema Object", 3.0.3) as in JSON Schema,
 * which does not know the keyword, but ajv refused to compile the schema: `{"allOf": [{"$ref": ...}], "nullable":
 * true}` (OpenAPI generators' nullable reference), an `enum` or a 2019-09 `$ref` beside it without `type`, a
 * `nullable: false` beside `type: "null"`, a `nullable` not boolean. So ajv compiles a copy without those.
 */
import type { Schema } from './subschemas.ts';

/**
 * Removes from one schema object, in place, a `nullable` that is not `true` beside a `type`; whether there was one.
 * Made to every subschema of the copy ajv compiles (`changedCopy`, by Dialect.source in tool-schemas.ts).
 */
export function withoutStrayNullable(schema: Schema): boolean {
  if (schema.nullable === undefined || (schema.nullable === true && schema.type !== undefined)) return false;
  delete schema.nullable;
  return true;
}
