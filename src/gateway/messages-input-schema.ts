/**
 * A messages tool's `input_schema` read as JSON Schema. The provider types its `properties` and `required` as nullable
 * (its SDKs' `Tool.InputSchema`: `properties?: unknown | null`, `required?: string[] | null`), a null saying the tool
 * has none, where JSON Schema has no null for either: ajv refuses such a schema ("properties must be object"), so a
 * tool the provider takes was svc's 400. The copy svc compiles leaves a null one out; the request keeps it, as the
 * upstream reads it (the mock's sampler reads a null as none already).
 */
export function inputSchemaAsJsonSchema(schema: Record<string, unknown>): Record<string, unknown> {
  if (schema.properties !== null && schema.required !== null) return schema;
  const copy = { ...schema };
  if (copy.properties === null) delete copy.properties;
  if (copy.required === null) delete copy.required;
  return copy;
}
