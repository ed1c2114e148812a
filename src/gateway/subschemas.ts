/**
 * The subschemas of a JSON Schema, with where each sits: only schema positions, so a property named `$schema` or an
 * `enum` value of object shape is not taken for a schema. The keywords of every dialect svc reads (draft-04 to
 * 2020-12) are followed in every one: a keyword unknown to a schema's dialect holds data its validator ignores, which
 * no real schema spells as a subschema (draft-04's translation, which only changes, follows draft-04's own).
 */
/** A JSON Schema object (a boolean schema is no object and has no subschemas). */
export type Schema = Record<string, unknown>;

/**
 * The keywords a walk follows: those whose value is a schema or a list of them, and those whose value maps names to
 * schemas (a `dependencies` entry may be a list of property names instead).
 */
export interface SchemaKeywords {
  readonly schemas: readonly string[];
  readonly maps: readonly string[];
}

/** The keywords of every dialect svc reads (`items` a list of schemas before 2020-12). */
const EVERY_DIALECT: SchemaKeywords = {
  schemas: [
    'items', 'additionalItems', 'additionalProperties', 'not', 'allOf', 'anyOf', 'oneOf', 'contains', 'propertyNames',
    'if', 'then', 'else', 'prefixItems', 'unevaluatedItems', 'unevaluatedProperties', 'contentSchema',
  ],
  maps: ['properties', 'patternProperties', 'definitions', '$defs', 'dependencies', 'dependentSchemas'],
};

/** Whether `value` is a schema object: an object, not a list (what every keyword holding a schema holds). */
export const isSchema = (value: unknown): value is Schema => typeof value === 'object' && value !== null && !Array.isArray(value);

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;
/** A key as it follows a path: `.name`, or `["a b"]` for one that is not an identifier. */
const step = (key: string): string => (IDENTIFIER.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`);

/**
 * Where a subschema sits below the schema a walk began at: the keyword, and the name or index within it, that hold it
 * in its parent. Its path is written only when asked for: most walks want none, and writing each one's took most of
 * a walk's time.
 */
export class Place {
  constructor(
    private readonly parent: Place | undefined,
    private readonly keyword: string,
    private readonly entry?: string | number,
  ) {}

  /** The path from where the walk began (`.properties.a`, `.anyOf[1]`). */
  path(): string {
    const entry = this.entry === undefined ? '' : typeof this.entry === 'number' ? `[${this.entry}]` : step(this.entry);
    return `${this.parent?.path() ?? ''}${step(this.keyword)}${entry}`;
  }
}

/**
 * Every schema below `schema`, depth first, each with its place, through `keywords` (those of every dialect unless
 * given). Lazily: a subschema's own are looked for once the caller has had it, so one it changes in place is walked
 * as changed (a keyword it removes is not followed).
 */
export function* subschemas(schema: Schema, keywords = EVERY_DIALECT, place?: Place): Generator<[place: Place, subschema: Schema]> {
  const children: Array<[Place, unknown]> = [];
  for (const keyword of keywords.schemas) {
    const value = schema[keyword];
    if (Array.isArray(value)) value.forEach((item, index) => children.push([new Place(place, keyword, index), item]));
    else if (value !== undefined) children.push([new Place(place, keyword), value]);
  }
  for (const keyword of keywords.maps) {
    const map = schema[keyword];
    if (isSchema(map)) for (const name of Object.keys(map)) children.push([new Place(place, keyword, name), map[name]]);
  }
  for (const [childPlace, child] of children) {
    if (!isSchema(child)) continue;
    yield [childPlace, child];
    yield* subschemas(child, keywords, childPlace);
  }
}

/**
 * A copy of the schema in which `change` has been made to the schema itself and every one below (through `keywords`,
 * those of every dialect unless given), each before its own are looked for; `change` says whether it changed one.
 * The schema itself if none was.
 */
export function changedCopy(schema: Schema, change: (schema: Schema) => boolean, keywords = EVERY_DIALECT): Schema {
  const copy = structuredClone(schema);
  let changed = change(copy);
  for (const [, subschema] of subschemas(copy, keywords)) changed = change(subschema) || changed;
  return changed ? copy : schema;
}

/**
 * Where a JSON Pointer leads in `root` (undefined past what it holds), and its path in the form a Place writes paths
 * in (`/properties/a~1b/anyOf/1`, as ajv's meta-schema errors place a fault, is `.properties["a/b"].anyOf[1]`). Each
 * token is first decoded by `decode`: a `$ref`'s percent-escapes (`#/definitions/a%20b`), which ajv decodes a token at
 * a time. It goes into lists and objects alike, as ajv does.
 */
export function followPointer(root: unknown, pointer: string, decode = (token: string) => token): { value: unknown; path: string } {
  let path = '';
  let value = root;
  for (const token of pointer.split('/').slice(1)) {
    const key = decode(token).replaceAll('~1', '/').replaceAll('~0', '~');
    path += Array.isArray(value) ? `[${key}]` : step(key);
    value = (isSchema(value) || Array.isArray(value)) && Object.hasOwn(value, key) ? (value as Record<string, unknown>)[key] : undefined;
  }
  return { value, path };
}
