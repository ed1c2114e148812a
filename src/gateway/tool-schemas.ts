/**
 * Declared tool schemas, compiled once per request with a real JSON Schema validator (ajv), and the check every
 * complete tool call passes before it is emitted downstream (SPEC 4.2). A schema that does not compile is the
 * client's error (400), never a crash.
 */
import { Ajv, type ValidateFunction } from 'ajv';
import { canonicalJson } from '../core/canonical-json.ts';
import { invalid } from '../core/errors.ts';
import type { ChatTool, ChatToolCall } from './providers/types.ts';

const ajv = new Ajv({ strict: false, allErrors: false, validateSchema: true });

/** Compiled validators by canonical schema text; bounded so hostile traffic cannot grow it without limit. */
const compiled = new Map<string, ValidateFunction>();
const MAX_COMPILED = 1000;

function compile(schema: Record<string, unknown>, where: string): ValidateFunction {
  const text = canonicalJson(schema);
  const hit = compiled.get(text);
  if (hit) return hit;
  let validate: ValidateFunction;
  try {
    validate = ajv.compile(schema);
  } catch (error) {
    throw invalid(`${where} is not a valid JSON Schema: ${(error as Error).message}`, { param: where });
  }
  if (compiled.size >= MAX_COMPILED) compiled.delete(compiled.keys().next().value as string);
  compiled.set(text, validate);
  return validate;
}

export interface ToolCallProblem {
  index: number;
  name: string;
  message: string;
}

export interface DeclaredTools {
  readonly names: ReadonlySet<string>;
  /** Null when the call names a declared tool and its arguments are JSON that satisfies the tool's schema. */
  check(call: ChatToolCall, index: number): ToolCallProblem | null;
}

/** Compile every declared function tool; throws a 400 for a schema that does not compile. */
export function compileTools(tools: readonly ChatTool[] | undefined): DeclaredTools {
  const validators = new Map<string, ValidateFunction | null>();
  for (const [index, tool] of (tools ?? []).entries()) {
    if (tool.type !== 'function') continue;
    const parameters = tool.function.parameters;
    validators.set(tool.function.name, parameters ? compile(parameters, `tools[${index}].function.parameters`) : null);
  }
  return {
    names: new Set(validators.keys()),
    check(call, index) {
      const name = call.function.name;
      if (!validators.has(name)) return { index, name, message: `the model called "${name}", which is not a declared tool` };
      let args: unknown;
      try {
        args = JSON.parse(call.function.arguments === '' ? '{}' : call.function.arguments);
      } catch {
        return { index, name, message: `the arguments of "${name}" are not valid JSON` };
      }
      const validate = validators.get(name);
      if (validate && !validate(args)) {
        return { index, name, message: `the arguments of "${name}" do not match its schema: ${ajv.errorsText(validate.errors)}` };
      }
      return null;
    },
  };
}

/** Compile a `response_format.json_schema.schema` so a malformed one is a 400 before any provider call. */
export function assertCompilableSchema(schema: Record<string, unknown>, where: string): void {
  compile(schema, where);
}
