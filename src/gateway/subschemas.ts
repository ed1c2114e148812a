/**
 * The subschemas of a JSON Schema, with where each sits: only schema positions, so a property named `$schema` or an
 * `enum` value of object shape is not taken for a schema. The keywords of every dialect svc reads (draft-04 to
 * 2020-12) are followed in every one: a keyword unknown to a schema's dialect holds data its validator ignores, which
 * no real schema spells as a subschema.
 */
/** A JSON Schema object (a boolean schema is no object and has no subschemas). */
export type Schema = Record<string, unknown>;

/** Keywords whose value is a schema, or a list of them (`items` before 2020-12). */
const SCHEMA_KEYWORDS = [
  'items', 'additionalItems', 'additionalProperties', 'not', 'allOf', 'anyOf', 'oneOf', 'contains', 'propertyNames',
  'if', 'then', 'else', 'prefixItems', 'unevaluatedItems', 'unevaluatedProperties', 'contentSchema',
];
/** Keywords whose value maps names to schemas (a `dependencies` entry may be a list of property names instead). */
const SCHEMA_MAP_KEYWORDS = ['properties', 'patternProperties', 'definitions', '$defs', 'dependencies', 'dependentSchemas'];

/** Whether `value` is a schema object: an object, not a list (what every keyword holding a schema holds). */
export const isSchema = (value: unknown): value is Schema => typeof value === 'object' && value !== null && !Array.isArray(value);

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;
/** A key as it follows a path: `.name`, or `["a b"]` for one that is not an identifier. */
const step = (key: string): string => (IDENTIFIER.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`);

/** Every schema below `schema`, depth first, each with its path from it (`.properties.a`, `.anyOf[1]`). */
export function* subschemas(schema: Schema, path = ''): Generator<[path: string, subschema: Schema]> {
  const children: Array<[string, unknown]> = [];
  for (const keyword of SCHEMA_KEYWORDS) {
    const value = schema[keyword];
    if (Array.isArray(value)) value.forEach((item, index) => children.push([`${path}${step(keyword)}[${index}]`, item]));
    else children.push([`${path}${step(keyword)}`, value]);
  }
  for (const keyword of SCHEMA_MAP_KEYWORDS) {
    const map = schema[keyword];
    if (isSchema(map)) for (const name of Object.keys(map)) children.push([`${path}${step(keyword)}${step(name)}`, map[name]]);
  }
  for (const [childPath, child] of children) {
    if (!isSchema(child)) continue;
    yield [childPath, child];
    yield* subschemas(child, childPath);
  }
}

/**
 * The schema, or a copy of it in which `edit` has changed the schema itself and every one below that `needs` it. They
 * are listed before any is changed: one inside a keyword an edit removes is changed too, and left out all the same.
 */
export function withEdited(schema: Schema, needs: (schema: Schema) => boolean, edit: (schema: Schema) => void): Schema {
  const needing = (root: Schema): Schema[] => [root, ...Array.from(subschemas(root), ([, subschema]) => subschema)].filter(needs);
  if (needing(schema).length === 0) return schema;
  const copy = structuredClone(schema);
  for (const subschema of needing(copy)) edit(subschema);
  return copy;
}

/**
 * A JSON Pointer into `schema` (`/properties/a~1b/anyOf/1`, as ajv's meta-schema errors place a fault) in the form
 * `subschemas` writes paths in (`.properties["a/b"].anyOf[1]`).
 */
export function pointerPath(schema: unknown, pointer: string): string {
  let path = '';
  let value = schema;
  for (const token of pointer.split('/').slice(1)) {
    const key = token.replaceAll('~1', '/').replaceAll('~0', '~');
    path += Array.isArray(value) ? `[${key}]` : step(key);
    value = (isSchema(value) || Array.isArray(value)) && Object.hasOwn(value, key) ? (value as Record<string, unknown>)[key] : undefined;
  }
  return path;
}
