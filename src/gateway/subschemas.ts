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
  /** The keyword of a schema's base URI, and of its name where that is `#name` (`id` in draft-04), `$id` if not given. */
  readonly id?: '$id' | 'id';
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
 * those of every dialect unless given), each before its own are looked for, and to every schema a local `$ref` among
 * them points to or names by its anchor (localAnchors) and those below it; `change` says whether it changed one. The schema itself if none was.
 *
 * A `$ref`'s target is compiled wherever it sits, and OpenAPI-derived schemas keep theirs under a keyword no dialect
 * knows (`#/components/schemas/A`), which the keywords alone never reach: a `nullable` there made ajv refuse the
 * schema. Each schema is changed once however many ways lead to it (a change need not be one to make twice), and a
 * `$ref` is followed in the copy as changed so far (one into what a change removed leads nowhere, as in ajv).
 */
export function changedCopy(schema: Schema, change: (schema: Schema) => boolean, keywords = EVERY_DIALECT): Schema {
  const copy = structuredClone(schema);
  // Found before any change, as a change may rename the keyword that names a schema (draft-04's `id` becomes `$id`).
  const anchors = localAnchors(copy, keywords.id);
  const changedOnce = new Set<Schema>();
  const refs: string[] = [];
  let changed = false;
  const visit = (subschema: Schema): void => {
    if (changedOnce.has(subschema)) return;
    changedOnce.add(subschema);
    changed = change(subschema) || changed;
    if (typeof subschema.$ref === 'string') refs.push(subschema.$ref);
  };
  const walk = (top: Schema): void => {
    visit(top);
    for (const [, subschema] of subschemas(top, keywords)) visit(subschema);
  };
  walk(copy);
  for (let ref = refs.pop(); ref !== undefined; ref = refs.pop()) {
    const target = localRefTarget(copy, ref, anchors);
    // One changed before had its own walked then: a cycle of `$ref`s, or a target the keywords reached, ends here.
    if (target && !changedOnce.has(target)) walk(target);
  }
  return changed ? copy : schema;
}

/** A `$ref` of an anchor's name (`#node`), as ajv reads one (its ANCHOR pattern, the `#` aside). */
const ANCHOR_REF = /^#[a-z_][-a-z0-9._]*$/i;

/**
 * What ajv skips when it looks for anchors: keywords whose value is no schema, though it may be an object (a
 * `default`, a `const`). The keywords whose lists it looks into are LISTS_OF_SCHEMAS (json-schema-traverse's).
 */
const NO_SCHEMA_INSIDE = new Set([
  'default', 'enum', 'const', 'required', 'maximum', 'minimum', 'exclusiveMaximum', 'exclusiveMinimum', 'multipleOf',
  'maxLength', 'minLength', 'pattern', 'format', 'maxItems', 'minItems', 'uniqueItems', 'maxProperties', 'minProperties',
]);
const LISTS_OF_SCHEMAS = new Set(['items', 'allOf', 'anyOf', 'oneOf']);

/**
 * The schemas of `root`'s document that a `$ref` of `#name` names, by name, where ajv (svc's check) finds them: an
 * `$anchor` of the name (2019-09 and later) or an `$id` of `#name` (draft-06 and draft-07; `id` in draft-04, given as
 * `idKeyword`), which ajv reads in every dialect, found under every key but those holding no schema (NO_SCHEMA_INSIDE),
 * under a keyword no dialect knows too (OpenAPI's `components`). The first of a name is kept (ajv refuses a schema
 * naming two schemas alike). A limit, as for pointers: the names are those of the root's own base; a subschema with
 * an `$id` of its own (not `#name`) starts another, whose names a `$ref` below it reads, and none is looked for there.
 */
export function localAnchors(root: Schema, idKeyword: '$id' | 'id' = '$id'): Map<string, Schema> {
  const anchors = new Map<string, Schema>();
  const name = (anchor: unknown, schema: Schema): void => {
    if (typeof anchor === 'string' && !anchors.has(anchor)) anchors.set(anchor, schema);
  };
  const pending: unknown[] = [root];
  for (let value = pending.pop(); value !== undefined; value = pending.pop()) {
    if (!isSchema(value)) continue;
    const id = value[idKeyword];
    if (value !== root && typeof id === 'string' && !id.startsWith('#')) continue;
    if (typeof id === 'string' && ANCHOR_REF.test(id)) name(id.slice(1), value);
    name(value.$anchor, value);
    for (const [key, child] of Object.entries(value)) {
      if (NO_SCHEMA_INSIDE.has(key)) continue;
      if (Array.isArray(child)) {
        if (LISTS_OF_SCHEMAS.has(key)) pending.push(...child);
      } else pending.push(child);
    }
  }
  return anchors;
}

/**
 * The schema a local `$ref` leads to, as ajv follows it from the root: a JSON Pointer into its own document
 * (`#/definitions/a`, `#` for the whole), percent-escapes decoded a token at a time (`#/definitions/a%20b`), or an
 * anchor's name (`#node`), looked up in `anchors` (localAnchors of the root). Undefined for any other `$ref` (another
 * document), a malformed escape, a pointer past what the document holds or to no schema object, and a name none has.
 * A limit: ajv reads a `$ref` below a subschema with an `$id` from that subschema, not the root.
 */
export function localRefTarget(root: Schema, ref: string, anchors?: ReadonlyMap<string, Schema>): Schema | undefined {
  if (ANCHOR_REF.test(ref)) return anchors?.get(ref.slice(1));
  if (ref !== '#' && !ref.startsWith('#/')) return undefined;
  let value: unknown;
  try {
    ({ value } = followPointer(root, ref.slice(1), decodeURIComponent));
  } catch {
    return undefined; // URIError: ajv refuses the schema then, and its 400 says so.
  }
  return isSchema(value) ? value : undefined;
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
