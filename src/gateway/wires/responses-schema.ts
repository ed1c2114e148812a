/**
 * The responses-wire request body (SPEC 4.2; shapes from the OpenAPI `CreateResponse`). svc keeps no conversation
 * state and never runs hosted tools, so `background`, stored `prompt` templates and hosted tool types are refused
 * with a clear 400 instead of being silently degraded. The one exception is `tool_search` (deferred-tools.ts): it
 * runs at the upstream (or, `execution: "client"`, at the client), only loading declared tools, so it is relayed.
 * `previous_response_id` and `conversation` name state a live upstream holds: relayed to it as sent, refused when
 * the mock would answer (upstream-state.ts).
 */
import { z } from 'zod';
import { invalid } from '../../core/errors.ts';
import { modelField } from '../../evidence/model-field.ts';
import type { ChatTool, ResponsesRequest } from '../providers/types.ts';
import { REASONING_EFFORTS, SERVICE_TIERS } from './chat-completions-schema.ts';
import { boundedTools, isDeferredTool } from '../deferred-tools.ts';
import { assertCompilableSchema, compileTools, declaredToolName, duplicateTool, namespacedToolName, SchemaBudget, type DeclaredTools } from '../tool-schemas.ts';

const toolName = z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/, 'tool names are 1-64 letters, digits, _ or -');

const functionTool = z.looseObject({
  type: z.literal('function'),
  name: toolName,
  description: z.string().nullable().optional(),
  parameters: z.record(z.string(), z.unknown()).nullable().optional(),
  strict: z.boolean().nullable().optional(),
});
const customTool = z.looseObject({ type: z.literal('custom'), name: toolName, description: z.string().optional(), format: z.looseObject({ type: z.string() }).optional() });
const namespaceTool = z.looseObject({ type: z.literal('namespace'), name: z.string().min(1), description: z.string(), tools: z.array(z.looseObject({ type: z.string() })).min(1) });
const toolSearchTool = z.looseObject({ type: z.literal('tool_search'), execution: z.enum(['server', 'client']).nullable().optional() });

const UNSUPPORTED_FIELDS: Record<string, string> = {
  prompt: 'stored prompt templates are not supported: send instructions and input directly.',
};

export const responsesRequestSchema = z.looseObject({
  model: modelField,
  input: z.union([z.string().min(1), z.array(z.looseObject({})).min(1)], { error: 'input is required: a string or a non-empty array of items' }),
  instructions: z.string().optional(),
  tools: boundedTools(z.looseObject({ type: z.string() })).optional(),
  tool_choice: z.union([z.enum(['none', 'auto', 'required']), z.looseObject({ type: z.string() })]).optional(),
  parallel_tool_calls: z.boolean().optional(),
  reasoning: z.looseObject({ effort: z.enum(REASONING_EFFORTS).nullable().optional(), summary: z.enum(['auto', 'concise', 'detailed']).nullable().optional() }).optional(),
  text: z
    .looseObject({
      format: z.looseObject({ type: z.enum(['text', 'json_object', 'json_schema']), name: z.string().optional(), schema: z.record(z.string(), z.unknown()).optional() }).optional(),
      verbosity: z.enum(['low', 'medium', 'high']).nullable().optional(),
    })
    .optional(),
  max_output_tokens: z.number().int().positive().optional(),
  // Relayed, and echoed by the mock in its Response, whose document types it an integer or null.
  max_tool_calls: z.number().int().nullable().optional(),
  temperature: z.number().min(0).max(2).optional(),
  top_p: z.number().min(0).max(1).optional(),
  metadata: z.record(z.string().max(64), z.string().max(512)).optional(),
  stream: z.boolean().optional(),
  store: z.boolean().optional(),
  background: z.literal(false, { error: 'background responses are not supported' }).optional(),
  // A response or conversation the upstream keeps (the OpenAPI ConversationParam: its id, or an object with it).
  previous_response_id: z.string().min(1).optional(),
  conversation: z.union([z.string().min(1), z.looseObject({ id: z.string().min(1) })]).optional(),
  truncation: z.enum(['auto', 'disabled']).optional(),
  include: z.array(z.string()).optional(),
  user: z.string().max(1024).optional(),
  prompt_cache_key: z.string().max(1024).optional(),
  safety_identifier: z.string().max(1024).optional(),
  service_tier: z.enum(SERVICE_TIERS).optional(),
});

const MESSAGE_ROLES: ReadonlySet<unknown> = new Set(['user', 'assistant', 'system', 'developer']);

/**
 * The `include` values the OpenAPI document's IncludeEnum lists: the upstream answers any other with a 400, so svc
 * refuses it before a run on every provider (the mock would answer it, a live upstream after a run).
 */
const INCLUDABLE: ReadonlySet<string> = new Set([
  'file_search_call.results',
  'web_search_call.results',
  'web_search_call.action.sources',
  'message.input_image.image_url',
  'computer_call_output.output.image_url',
  'code_interpreter_call.outputs',
  'reasoning.encrypted_content',
  'message.output_text.logprobs',
]);

function checkInclude(include: readonly string[]): void {
  for (let index = 0; index < include.length; index++) {
    const value = include[index]!;
    if (!INCLUDABLE.has(value)) {
      // Quoted as JSON and cut short: the value is the client's, of any length and characters.
      throw invalid(`include[${index}]: ${JSON.stringify(value.slice(0, 64))} is not an include value; the values are ${[...INCLUDABLE].join(', ')}.`, { param: 'include' });
    }
  }
}

/**
 * The input's message items (those with a `role`: the OpenAPI EasyInputMessage, InputMessage and OutputMessage) have
 * one of the wire's roles and a string or a list of typed parts as content: anything else is the upstream's 400
 * (and was the mock's crash, a 502), so svc's before a run. Other item types are the upstream's to judge.
 */
function checkMessageItems(input: ReadonlyArray<Record<string, unknown>>): void {
  // Plain loops: this runs for every request with an item list.
  for (let index = 0; index < input.length; index++) {
    const item = input[index]!;
    if (!('role' in item)) continue;
    if (!MESSAGE_ROLES.has(item.role)) throw invalid(`input[${index}].role: a message's role is user, assistant, system or developer.`, { param: `input[${index}].role` });
    const content = item.content;
    if (typeof content !== 'string' && !isTypedPartList(content)) {
      throw invalid(`input[${index}].content: a message's content is a string or a list of parts, each an object with a type.`, { param: `input[${index}].content` });
    }
  }
}

function isTypedPartList(content: unknown): boolean {
  if (!Array.isArray(content)) return false;
  for (const part of content) if (typeof (part as { type?: unknown } | null)?.type !== 'string') return false;
  return true;
}

export interface ValidatedResponses {
  request: ResponsesRequest;
  tools: DeclaredTools;
  customTools: ReadonlySet<string>;
}

function withoutNulls(body: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(body)) if (value !== null) out[key] = value;
  return out;
}

/**
 * The tools a client-executed tool search loaded: the input's `tool_search_output` items carry their definitions,
 * which need not be in `tools`, and the model calls them as it calls declared ones. Each function tool is declared as
 * a deferred one (its schema compiled when a call names it), each custom tool by name, and a loaded `namespace`'s
 * tools under its name (the model's calls of them carry it); a loaded tool of a name already declared (a server
 * search's output sent back with the conversation) is that tool. A definition that is no function or custom tool or
 * namespace of them is left to the upstream to judge.
 */
function declareLoadedTools(
  input: ReadonlyArray<Record<string, unknown>>,
  functions: readonly ChatTool[],
  deferred: Array<{ tool: ChatTool; where: string }>,
  customTools: Set<string>,
): void {
  const declared = new Set<string>(customTools);
  for (const tool of functions) declared.add(tool.function.name);
  for (const { tool } of deferred) declared.add(tool.function.name);
  const load = (tool: unknown, where: string, namespace?: string): void => {
    const loaded = functionTool.safeParse(tool);
    if (loaded.success) {
      const { parameters } = loaded.data;
      const name = declaredToolName(namespace, loaded.data.name);
      if (declared.has(name)) return;
      declared.add(name);
      deferred.push({ tool: { type: 'function', function: { name, ...(parameters ? { parameters } : {}) } }, where: `${where}.parameters` });
      return;
    }
    const custom = customTool.safeParse(tool);
    if (!custom.success) return;
    const name = declaredToolName(namespace, custom.data.name);
    if (declared.has(name)) return;
    declared.add(name);
    customTools.add(name);
  };
  for (const [itemIndex, item] of input.entries()) {
    if (item.type !== 'tool_search_output' || !Array.isArray(item.tools)) continue;
    for (const [index, tool] of (item.tools as unknown[]).entries()) {
      const namespace = namespaceTool.safeParse(tool);
      if (!namespace.success) {
        load(tool, `input[${itemIndex}].tools[${index}]`);
        continue;
      }
      for (const [inner, member] of namespace.data.tools.entries()) load(member, `input[${itemIndex}].tools[${index}].tools[${inner}]`, namespace.data.name);
    }
  }
}

export function parseResponsesRequest(body: unknown): ValidatedResponses {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw invalid('The request body must be a JSON object.');
  const raw = withoutNulls(body as Record<string, unknown>);
  for (const [field, message] of Object.entries(UNSUPPORTED_FIELDS)) if (field in raw) throw invalid(message, { param: field });
  const parsed = responsesRequestSchema.parse(raw);
  if (parsed.metadata && Object.keys(parsed.metadata).length > 16) throw invalid('metadata has at most 16 keys.', { param: 'metadata' });
  if (Array.isArray(parsed.input)) checkMessageItems(parsed.input);
  if (parsed.include) checkInclude(parsed.include);
  const functions: ChatTool[] = [];
  /** Where each of `functions` is in the request (`tools[1].parameters`), for a refusal of its schema to name. */
  const functionsWhere: string[] = [];
  // Function tools with defer_loading: true, declared by name; each schema compiled when a call names its tool.
  const deferred: Array<{ tool: ChatTool; where: string }> = [];
  const customTools = new Set<string>();
  let searches = false;
  /** Declare a function or custom tool (`where` its place in the request), under its namespace's name if it has one. */
  const declare = (tool: { type: string }, where: string, namespace?: string): boolean => {
    if (tool.type === 'function') {
      const { name, parameters } = functionTool.parse(tool);
      const declared: ChatTool = { type: 'function', function: { name: declaredToolName(namespace, name), ...(parameters ? { parameters } : {}) } };
      if (isDeferredTool(tool)) deferred.push({ tool: declared, where: `${where}.parameters` });
      else {
        functions.push(declared);
        functionsWhere.push(`${where}.parameters`);
      }
    } else if (tool.type === 'custom') {
      const name = declaredToolName(namespace, customTool.parse(tool).name);
      if (customTools.has(name)) throw duplicateTool(name);
      customTools.add(name);
    } else return false;
    return true;
  };
  const hosted = (type: string, where: string): Error =>
    invalid(`${where}: the hosted tool type "${type}" is not supported; svc never runs tools, declare function or custom tools.`, { param: `${where}.type` });
  for (const [index, tool] of (parsed.tools ?? []).entries()) {
    if (declare(tool, `tools[${index}]`)) continue;
    if (tool.type === 'tool_search') {
      toolSearchTool.parse(tool);
      searches = true;
    } else if (tool.type === 'namespace') {
      const namespace = namespaceTool.parse(tool);
      for (const [inner, member] of namespace.tools.entries()) {
        if (!declare(member, `tools[${index}].tools[${inner}]`, namespace.name)) throw hosted(member.type, `tools[${index}].tools[${inner}]`);
      }
    } else throw hosted(tool.type, `tools[${index}]`);
  }
  if (searches && Array.isArray(parsed.input)) declareLoadedTools(parsed.input, functions, deferred, customTools);
  const schemas = new SchemaBudget();
  const tools = compileTools(functions, schemas, deferred, functionsWhere);
  for (const name of customTools) if (tools.names.has(name)) throw duplicateTool(name);
  const choice = parsed.tool_choice;
  // A call required of no tool cannot be made: the upstream refuses it, and the mock would answer with text.
  if (choice === 'required' && (parsed.tools ?? []).length === 0) throw invalid("tool_choice 'required' needs tools.", { param: 'tool_choice' });
  if (typeof choice === 'object') {
    // A choice of one tool, or of the allowed ones: each a declared function or custom tool, never a hosted one.
    const allowed = choice.type === 'allowed_tools';
    const chosen = allowed ? (choice as { tools?: unknown }).tools : [choice];
    if (!Array.isArray(chosen) || chosen.length === 0) throw invalid('tool_choice of type allowed_tools needs a non-empty list of tools.', { param: 'tool_choice.tools' });
    // Its mode is required (the OpenAPI ToolChoiceAllowed): a mode the upstream does not know is its 400, not svc's `auto`.
    const mode = (choice as { mode?: unknown }).mode;
    if (allowed && mode !== 'auto' && mode !== 'required') throw invalid("tool_choice of type allowed_tools needs a mode, 'auto' or 'required'.", { param: 'tool_choice.mode' });
    for (const [index, tool] of chosen.entries()) {
      const param = allowed ? `tool_choice.tools[${index}]` : 'tool_choice';
      const type = (tool as { type?: unknown } | null)?.type;
      if (type !== 'function' && type !== 'custom') {
        throw invalid(`${param}: the hosted tool type "${String(type)}" is not supported; svc never runs tools, choose a declared function or custom tool.`, { param });
      }
      const name = (tool as { name?: unknown }).name;
      // The chat wire's `{type, function: {name}}` is the likely mistake: say what the responses wire wants instead.
      if (typeof name !== 'string' || name === '') {
        throw invalid(`${param} needs a name: a responses-wire choice is {"type": "${String(type)}", "name": "..."}, not the chat wire's {"type": "function", "function": {"name": "..."}}.`, { param });
      }
      // `namespace.name` is svc's key for a namespace's tool, not a name a tool has (a tool name has no `.`): sent as is
      // it names no tool upstream, so the choice would be the upstream's 400 after a run.
      if (name.includes('.')) {
        const own = name.slice(name.lastIndexOf('.') + 1);
        throw invalid(`${param} names "${name}", but a tool name has no "."; a namespace's tool is chosen by its own name, as {"type": "${String(type)}", "name": "${own}"}.`, { param });
      }
      // A choice names a tool of its own kind: a function choice of a custom tool (or the reverse) forces a call
      // the upstream refuses, and the mock would make.
      const [own, other] = type === 'function' ? [tools.names, customTools] : [customTools, tools.names];
      if (own.has(name)) continue;
      // A choice has no namespace field (the OpenAPI ToolChoiceFunction is a type and a name), so a namespace's tool
      // is chosen by its own name, when only one namespace declares it.
      const inNamespace = namespacedToolName(name, [own]);
      if (inNamespace === null) throw invalid(`${param} names "${name}", which more than one namespace declares; a choice cannot tell which.`, { param });
      if (inNamespace !== undefined) continue;
      if (other.has(name) || namespacedToolName(name, [other]) !== undefined) {
        throw invalid(`${param} chooses "${name}" as a ${type} tool, but it is declared as a ${type === 'function' ? 'custom' : 'function'} tool.`, { param });
      }
      throw invalid(`${param} names "${name}", which is not a declared tool.`, { param });
    }
  }
  const format = parsed.text?.format;
  if (format?.type === 'json_schema') {
    if (!format.schema || !format.name) throw invalid('text.format of type json_schema needs a name and a schema.', { param: 'text.format' });
    assertCompilableSchema(format.schema, 'text.format.schema', schemas);
  }
  return { request: parsed as ResponsesRequest, tools, customTools };
}
