/**
 * JSON Schema draft-04's meta-schema, as json-schema.org publishes it at http://json-schema.org/draft-04/schema#: what
 * a schema declaring draft-04 must be. ajv ships the meta-schemas of draft-06 onwards only (draft-04's is in the
 * ajv-draft-04 package, not a dependency of svc). Where it is stricter than draft-06's: `exclusiveMinimum` and
 * `exclusiveMaximum` are booleans, each present only beside its bound; `required`, `enum`, `type` lists and the
 * schema lists of `allOf`/`anyOf`/`oneOf`/`items` are not empty; a subschema is an object (no `true`/`false`).
 */
const schemaArray = { type: 'array', minItems: 1, items: { $ref: '#' } };
const positiveInteger = { type: 'integer', minimum: 0 };
const positiveIntegerDefault0 = { allOf: [{ $ref: '#/definitions/positiveInteger' }, { default: 0 }] };
const simpleTypes = { enum: ['array', 'boolean', 'integer', 'null', 'number', 'object', 'string'] };
const stringArray = { type: 'array', items: { type: 'string' }, minItems: 1, uniqueItems: true };
const schemaMap = { type: 'object', additionalProperties: { $ref: '#' }, default: {} };

export const DRAFT_04_META_SCHEMA = {
  id: 'http://json-schema.org/draft-04/schema#',
  $schema: 'http://json-schema.org/draft-04/schema#',
  description: 'Core schema meta-schema',
  definitions: { schemaArray, positiveInteger, positiveIntegerDefault0, simpleTypes, stringArray },
  type: 'object',
  properties: {
    id: { type: 'string' },
    $schema: { type: 'string' },
    title: { type: 'string' },
    description: { type: 'string' },
    default: {},
    multipleOf: { type: 'number', minimum: 0, exclusiveMinimum: true },
    maximum: { type: 'number' },
    exclusiveMaximum: { type: 'boolean', default: false },
    minimum: { type: 'number' },
    exclusiveMinimum: { type: 'boolean', default: false },
    maxLength: { $ref: '#/definitions/positiveInteger' },
    minLength: { $ref: '#/definitions/positiveIntegerDefault0' },
    pattern: { type: 'string', format: 'regex' },
    additionalItems: { anyOf: [{ type: 'boolean' }, { $ref: '#' }], default: {} },
    items: { anyOf: [{ $ref: '#' }, { $ref: '#/definitions/schemaArray' }], default: {} },
    maxItems: { $ref: '#/definitions/positiveInteger' },
    minItems: { $ref: '#/definitions/positiveIntegerDefault0' },
    uniqueItems: { type: 'boolean', default: false },
    maxProperties: { $ref: '#/definitions/positiveInteger' },
    minProperties: { $ref: '#/definitions/positiveIntegerDefault0' },
    required: { $ref: '#/definitions/stringArray' },
    additionalProperties: { anyOf: [{ type: 'boolean' }, { $ref: '#' }], default: {} },
    definitions: schemaMap,
    properties: schemaMap,
    patternProperties: schemaMap,
    dependencies: { type: 'object', additionalProperties: { anyOf: [{ $ref: '#' }, { $ref: '#/definitions/stringArray' }] } },
    enum: { type: 'array', minItems: 1, uniqueItems: true },
    type: {
      anyOf: [{ $ref: '#/definitions/simpleTypes' }, { type: 'array', items: { $ref: '#/definitions/simpleTypes' }, minItems: 1, uniqueItems: true }],
    },
    format: { type: 'string' },
    allOf: { $ref: '#/definitions/schemaArray' },
    anyOf: { $ref: '#/definitions/schemaArray' },
    oneOf: { $ref: '#/definitions/schemaArray' },
    not: { $ref: '#' },
  },
  dependencies: { exclusiveMaximum: ['maximum'], exclusiveMinimum: ['minimum'] },
  default: {},
};
