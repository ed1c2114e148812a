/**
 * The shapes of the answers the client reads field by field: a buffered chat completion, a buffered message, a
 * tool-cache lookup; and the top level of each management answer its callers read (the CLI's tables). svc always
 * answers so; a server that is not svc (what `--url` or a proxy put in its place) may not, and reading such an answer
 * returned nothing as if it were an answer (`choices: 'none'` read as empty content, `{"status":"ok"}` as a user
 * deleted) or threw a bare TypeError from deep inside (`content: [null]`, `keys` undefined). What the client does not
 * read is not checked, nor what lies below a management answer's top level.
 */
import { isObject } from './streams.ts';

const absentOr = (value: unknown, check: (value: unknown) => boolean) => value === undefined || value === null || check(value);
const isString = (value: unknown): value is string => typeof value === 'string';
const isCount = (value: unknown) => typeof value === 'number' && Number.isFinite(value);

/** A usage object (absent or null when the server counted nothing) whose named counts are numbers. */
const isUsage = (value: unknown, counts: readonly string[]) => absentOr(value, (usage) => isObject(usage) && counts.every((name) => isCount(usage[name])));

function isChatToolCall(call: unknown): boolean {
  return isObject(call) && absentOr(call.id, isString) && isObject(call.function) && isString(call.function.name) && isString(call.function.arguments);
}

function isChatChoice(choice: unknown): boolean {
  if (!isObject(choice) || !absentOr(choice.index, Number.isInteger) || !absentOr(choice.finish_reason, isString)) return false;
  const message = choice.message;
  if (!isObject(message) || !absentOr(message.content, isString)) return false;
  return absentOr(message.tool_calls, (calls) => Array.isArray(calls) && calls.every(isChatToolCall));
}

/** A buffered chat completion as `chat` reads it: its choices, usage and model. */
export function isChatCompletion(body: Record<string, unknown>): boolean {
  return (
    Array.isArray(body.choices) &&
    body.choices.every(isChatChoice) &&
    isUsage(body.usage, ['prompt_tokens', 'completion_tokens', 'total_tokens']) &&
    absentOr(body.model, isString)
  );
}

/** A content block: any type (thinking, a server tool's) but text and tool_use, the two `messages` reads, as the wire has them. */
function isMessageBlock(block: unknown): boolean {
  if (!isObject(block) || !isString(block.type)) return false;
  if (block.type === 'text') return isString(block.text);
  if (block.type === 'tool_use') return isString(block.id) && isString(block.name) && isObject(block.input);
  return true;
}

/** A buffered message as `messages` reads it: its content blocks, usage, stop reason and model. */
export function isMessage(body: Record<string, unknown>): boolean {
  return (
    Array.isArray(body.content) &&
    body.content.every(isMessageBlock) &&
    isUsage(body.usage, ['input_tokens', 'output_tokens']) &&
    absentOr(body.stop_reason, isString) &&
    absentOr(body.model, isString)
  );
}

/** A tool-cache lookup: `{hit: false}`, or `{hit: true, result}` with the cached result (null included). */
export function isToolCacheLookup(body: unknown): body is { hit: boolean; result?: unknown } {
  return isObject(body) && (body.hit === false || (body.hit === true && 'result' in body && body.result !== undefined));
}

/** The kinds of a management answer's top-level fields. */
const FIELD_KINDS = {
  object: isObject,
  /** A list of objects: a table's rows. */
  rows: (value: unknown) => Array.isArray(value) && value.every(isObject),
  string: isString,
  count: isCount,
  true: (value: unknown) => value === true,
} satisfies Record<string, (value: unknown) => boolean>;

/** What a call's 2xx answer must be (`is`), and its name in the error when it is not (`what`: "a page of API keys"). */
export interface AnswerShape {
  readonly is: (body: unknown) => boolean;
  readonly what: string;
}

/** A management answer: an object holding each of `fields`, of its kind; what else it holds is not checked. */
export function holding(what: string, fields: Record<string, keyof typeof FIELD_KINDS>): AnswerShape {
  const checks = Object.entries(fields).map(([name, kind]) => [name, FIELD_KINDS[kind]] as const);
  return { what, is: (body) => isObject(body) && checks.every(([name, check]) => check(body[name])) };
}
