/**
 * Validate what svc emits against the chat-completions wire's official OpenAPI document
 * (../shared/reference/chat-completions-openapi.json): `validateAgainst('CreateEmbeddingResponse', body)` compiles
 * `#/components/schemas/<Name>` with ajv (strict off: the document carries vendor keywords such as `x-oaiMeta`) and
 * returns the errors, or null when the value conforms.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';

const here = dirname(fileURLToPath(import.meta.url));
/**
 * A copy of ../shared/reference/chat-completions-openapi.json is vendored in test/fixtures so a clean checkout (CI)
 * validates against it too; SVC_OPENAPI_REFERENCE overrides the path.
 */
export const OPENAPI_PATH = process.env.SVC_OPENAPI_REFERENCE ?? join(here, '..', 'fixtures', 'chat-completions-openapi.json');

/**
 * The document mixes OpenAPI 3.0 `nullable: true` into 3.1 schemas; JSON Schema needs it as a `null` type (and a
 * `null` enum member) instead.
 */
function withoutNullable(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(withoutNullable);
  if (node === null || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node as Record<string, unknown>)) {
    if (key !== 'nullable') out[key] = withoutNullable(value);
  }
  if ((node as { nullable?: unknown }).nullable === true) {
    if (typeof out.type === 'string') out.type = [out.type, 'null'];
    else if (Array.isArray(out.type) && !out.type.includes('null')) out.type = [...out.type, 'null'];
    if (Array.isArray(out.enum) && !out.enum.includes(null)) out.enum = [...out.enum, null];
    if (out.type === undefined && out.enum === undefined) return { anyOf: [out, { type: 'null' }] };
  }
  return out;
}

let ajv: Ajv | null = null;
const compiled = new Map<string, ValidateFunction>();

function instance(): Ajv {
  if (ajv) return ajv;
  const document = JSON.parse(readFileSync(OPENAPI_PATH, 'utf8')) as { components: { schemas: Record<string, unknown> } };
  ajv = new Ajv({ strict: false, allErrors: true, validateFormats: true });
  // ajv-formats ships CommonJS; its default export arrives wrapped under ESM.
  const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (a: Ajv) => void;
  addFormats(ajv);
  // OpenAPI 3.1 formats ajv does not know; values are checked by type only.
  for (const format of ['unixtime', 'float', 'double', 'int32', 'int64', 'binary']) ajv.addFormat(format, true);
  ajv.addSchema({ components: withoutNullable(document.components) }, 'openapi');
  return ajv;
}

/** Errors of `value` against `#/components/schemas/<schemaName>`, or null when it conforms. */
export function validateAgainst(schemaName: string, value: unknown): ErrorObject[] | null {
  let validate = compiled.get(schemaName);
  if (!validate) {
    const found = instance().getSchema(`openapi#/components/schemas/${schemaName}`);
    if (!found) throw new Error(`no schema ${schemaName} in ${OPENAPI_PATH}`);
    validate = found;
    compiled.set(schemaName, validate);
  }
  return validate(value) ? null : [...(validate.errors ?? [])];
}
