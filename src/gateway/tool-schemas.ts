/**
 * Declared tool schemas, compiled once per request with a real JSON Schema validator (ajv), and the check every
 * complete tool call passes before it is emitted downstream (SPEC 4.2). A schema that does not compile is the
 * client's error (400), never a crash.
 */
import { Ajv, type ValidateFunction } from 'ajv';
import safeRegex from 'safe-regex2';
import { canonicalJson } from '../core/canonical-json.ts';
import { invalid } from '../core/errors.ts';
import type { ChatTool, ChatToolCall } from './providers/types.ts';

/**
 * The `pattern`s of declared schemas are the client's, and so, through its prompt, are the arguments a model writes
 * for them: `^(a+)+$` against forty a's and a '!' backtracks for hours on the event loop every request shares. V8
 * switches to its linear-time engine on excessive backtracking (`--enable-experimental-regexp-engine-on-excessive-
 * backtracks`, set by bin/launch.mjs), but not for patterns with the `u` flag, which ajv gives every pattern. So a
 * pattern is compiled without `u`, unless it uses what only `u` means (`\p{L}`, `\u{1F600}`, characters beyond the
 * BMP); such a one keeps `u` if it nests no quantifier (safe-regex2) and is refused otherwise. The price: without `u`,
 * `.` and a negated class take one UTF-16 unit, so a length-bounded pattern counts an emoji as two characters.
 */
const NEEDS_UNICODE = /\\[pP]\{|\\u\{|[\u{10000}-\u{10FFFF}]/u;

export function patternRegExp(pattern: string, flags: string): RegExp {
  if (!NEEDS_UNICODE.test(pattern)) return new RegExp(pattern, flags.replace('u', ''));
  if (!safeRegex(pattern)) throw new Error(`the pattern ${JSON.stringify(pattern)} needs the u flag and nests quantifiers, so it could backtrack without end`);
  return new RegExp(pattern, flags);
}
// ajv calls it for every `pattern` and `patternProperties`; `code` names it only in standalone code, never made here.
patternRegExp.code = 'patternRegExp';

const ajv = new Ajv({ strict: false, allErrors: false, validateSchema: true, code: { regExp: patternRegExp } });

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
