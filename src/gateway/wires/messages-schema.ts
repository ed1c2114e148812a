/**
 * The messages-wire request body (SPEC 4.2): `model`, non-empty `messages`, positive `max_tokens` required; system,
 * structured content blocks (the fields each known block type requires), tools, tool_choice, thinking,
 * stop_sequences, temperature, metadata, service_tier typed; other fields pass through. Beta tokens travel only in the `messages-beta` / `anthropic-beta` header, never in the body.
 */
import { z } from 'zod';
import { invalid } from '../../core/errors.ts';
import { modelField } from '../../evidence/model-field.ts';
import type { ChatTool, ChatToolCall, MessagesRequest } from '../providers/types.ts';
import { boundedTools, isDeferredTool } from '../deferred-tools.ts';
import { assertCompilableSchema, compileTools, SchemaBudget, type DeclaredTools } from '../tool-schemas.ts';
import { inputSchemaAsJsonSchema } from '../messages-input-schema.ts';

/** A content block: an object with a type (`{type: "text", ...}`). */
function isTypedBlock(value: unknown): value is { type: string; content?: unknown } {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && typeof (value as { type?: unknown }).type === 'string' && (value as { type: string }).type !== '';
}

/**
 * A `tool_result` block's content: absent, a string, or typed blocks (a nested `tool_result` checked alike). The local
 * token count and the mock read its blocks as they read a message's; an entry such as `null` failed them (a 500 from
 * count_tokens, a failed run from the mock) instead of being refused.
 */
function isToolResultContent(content: unknown): boolean {
  if (content === undefined || content === null || typeof content === 'string') return true;
  return Array.isArray(content) && content.every((part) => isTypedBlock(part) && (part.type !== 'tool_result' || isToolResultContent(part.content)));
}

const isString = (value: unknown): value is string => typeof value === 'string';
/** An optional flag: absent (null read as absent) or a boolean. */
const isOptionalBoolean = (value: unknown): boolean => value === undefined || value === null || typeof value === 'boolean';
const isObjectValue = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** A field of a block a check requires, and what it must be. */
type FieldRule = readonly [field: string, test: (value: unknown) => boolean, must: string];

const STRING: (field: string) => FieldRule = (field) => [field, isString, 'must be a string'];

/**
 * The fields the provider requires of each block type a request sends (its SDK's `*BlockParam` types), checked here so
 * that a malformed one is svc's 400 naming the field, not the upstream's relayed after a call (and a run) for nothing.
 * Block types not listed (server tools' results, search results, types a later API adds) pass through unchecked.
 */
const BLOCK_FIELDS: Readonly<Record<string, readonly FieldRule[]>> = {
  text: [STRING('text')],
  image: [['source', isObjectValue, 'must be an object with a type']],
  document: [['source', isObjectValue, 'must be an object with a type']],
  tool_use: [STRING('id'), STRING('name'), ['input', isObjectValue, 'must be an object']],
  server_tool_use: [STRING('id'), STRING('name')],
  tool_result: [STRING('tool_use_id'), ['content', isToolResultContent, 'must be a string or an array of content blocks'], ['is_error', isOptionalBoolean, 'must be a boolean']],
  thinking: [STRING('thinking'), STRING('signature')],
  redacted_thinking: [STRING('data')],
};

/** What each image or document source type requires besides its type (base64 data, a URL, an uploaded file's id). */
const SOURCE_FIELDS: Readonly<Record<string, readonly FieldRule[]>> = {
  base64: [STRING('data'), STRING('media_type')],
  url: [STRING('url')],
  file: [STRING('file_id')],
  text: [STRING('data')],
  content: [['content', (content) => isString(content) || Array.isArray(content), 'must be a string or an array of content blocks']],
};

function checkFields(value: Record<string, unknown>, rules: readonly FieldRule[], path: string[], ctx: z.RefinementCtx): void {
  for (const [field, test, must] of rules) {
    if (!test(value[field])) ctx.addIssue({ code: 'custom', message: must, path: [...path, field] });
  }
}

function checkBlock(value: { type: string; [field: string]: unknown }, ctx: z.RefinementCtx): void {
  const rules = BLOCK_FIELDS[value.type];
  if (rules === undefined) return;
  checkFields(value, rules, [], ctx);
  const source = value.source;
  if ((value.type === 'image' || value.type === 'document') && isObjectValue(source)) {
    // A source type svc does not know (a later API's) is the upstream's to judge.
    if (!isString(source.type) || source.type === '') ctx.addIssue({ code: 'custom', message: 'must be a string', path: ['source', 'type'] });
    else checkFields(source, SOURCE_FIELDS[source.type] ?? [], ['source'], ctx);
  }
}

const block = z.looseObject({ type: z.string().min(1) }).superRefine(checkBlock);
const content = z.union([z.string(), z.array(block).min(1)]);

const message = z.looseObject({ role: z.enum(['user', 'assistant']), content });

const tool = z.union([
  z.looseObject({
    name: z.string().regex(/^[a-zA-Z0-9_-]{1,128}$/, 'tool names are 1-128 letters, digits, _ or -'),
    description: z.string().optional(),
    input_schema: z.looseObject({ type: z.literal('object') }),
    type: z.literal('custom').optional(),
  }),
  // Provider-defined tools (e.g. `bash_20250124`) carry a versioned type and no schema; passed through untouched.
  z.looseObject({ type: z.string().regex(/_\d{8}$/), name: z.string().min(1) }),
  // The MCP connector's toolset (the `mcp-client-*` beta): the tools of one of the request's `mcp_servers`, named by
  // that server, not here; the provider calls them (`mcp_tool_use` blocks), so there is nothing for svc to check.
  z.looseObject({ type: z.literal('mcp_toolset'), mcp_server_name: z.string().min(1) }),
]);

const tools = boundedTools(tool);

const toolChoice = z.discriminatedUnion('type', [
  z.looseObject({ type: z.literal('auto'), disable_parallel_tool_use: z.boolean().optional() }),
  z.looseObject({ type: z.literal('any'), disable_parallel_tool_use: z.boolean().optional() }),
  z.looseObject({ type: z.literal('none') }),
  z.looseObject({ type: z.literal('tool'), name: z.string().min(1), disable_parallel_tool_use: z.boolean().optional() }),
]);

/** The least `thinking.budget_tokens` the provider takes. */
const MIN_THINKING_BUDGET = 1024;

/**
 * `thinking`: an object with a type. `enabled` (manual extended thinking) needs an integer `budget_tokens` of at least
 * 1024 (below `max_tokens` too: `checkThinkingBudget`); `display`, where sent, is a string or null. Other types pass as
 * sent (`disabled`, `adaptive`, `between_tools`, and those a later model adds): which types a model takes is the
 * upstream's to say, and refusing one svc does not know yet would refuse requests the API answers.
 */
const thinking = z
  .looseObject({ type: z.string().min(1), display: z.string().nullable().optional() })
  .superRefine((value, ctx) => {
    if (value.type !== 'enabled') return;
    const budget = value.budget_tokens;
    if (!Number.isInteger(budget) || (budget as number) < MIN_THINKING_BUDGET) {
      ctx.addIssue({ code: 'custom', message: `must be an integer of at least ${MIN_THINKING_BUDGET} when thinking is enabled`, path: ['budget_tokens'] });
    }
  });

/**
 * The capacity a request may ask for (the SDK's `MessageCreateParams.service_tier`). Any other value is a 400 here: the
 * provider would refuse it only after a run was recorded, and the mock would answer it. count_tokens takes no tier.
 */
const SERVICE_TIERS = ['auto', 'standard_only'] as const;

const countFields = {
  model: modelField,
  messages: z.array(message).min(1, 'messages must be a non-empty array'),
  system: z.union([z.string(), z.array(block)]).optional(),
  tools: tools.optional(),
  tool_choice: toolChoice.optional(),
  thinking: thinking.optional(),
};

export const messagesRequestSchema = z.looseObject({
  ...countFields,
  max_tokens: z.number({ error: 'max_tokens is required and must be a positive integer' }).int().positive('max_tokens must be a positive integer'),
  stream: z.boolean().optional(),
  stop_sequences: z.array(z.string()).optional(),
  temperature: z.number().min(0).max(1).optional(),
  top_p: z.number().min(0).max(1).optional(),
  top_k: z.number().int().min(0).optional(),
  metadata: z.looseObject({ user_id: z.string().max(256).nullable().optional() }).optional(),
  service_tier: z.enum(SERVICE_TIERS).optional(),
});

export const countTokensSchema = z.looseObject(countFields);

export interface ValidatedMessages {
  request: MessagesRequest;
  tools: DeclaredTools;
}

const asFunctionTool = (tool: { name: string; input_schema: Record<string, unknown> }): ChatTool => ({
  type: 'function',
  function: { name: tool.name, parameters: inputSchemaAsJsonSchema(tool.input_schema) },
});

/** Messages tools declared to the shared tool checker: those in context compiled, deferred ones when a call names one. */
function declareTools(tools: MessagesRequest['tools'], budget: SchemaBudget): DeclaredTools {
  const inContext: ChatTool[] = [];
  const inContextWhere: string[] = [];
  const deferred: Array<{ tool: ChatTool; where: string }> = [];
  for (const [index, tool] of (tools ?? []).entries()) {
    if (!('input_schema' in tool)) continue;
    if (isDeferredTool(tool)) deferred.push({ tool: asFunctionTool(tool), where: `tools[${index}].input_schema` });
    else {
      inContext.push(asFunctionTool(tool));
      inContextWhere.push(`tools[${index}].input_schema`);
    }
  }
  return compileTools(inContext, budget, deferred, inContextWhere);
}

function assertBody(body: unknown): Record<string, unknown> {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw invalid('The request body must be a JSON object.');
  if ('betas' in body) throw invalid('Beta tokens travel in the messages-beta (anthropic-beta) header, not in the body.');
  return body as Record<string, unknown>;
}

function checkToolChoice(parsed: { tools?: MessagesRequest['tools']; tool_choice?: { type: string; name?: string } }, tools: DeclaredTools) {
  const choice = parsed.tool_choice;
  if (choice?.type === 'tool' && !(parsed.tools ?? []).some((tool) => tool.name === choice.name)) {
    throw invalid(`tool_choice names "${choice.name}", which is not a declared tool.`);
  }
  if ((choice?.type === 'any' || choice?.type === 'tool') && tools.names.size === 0 && !(parsed.tools ?? []).length) {
    throw invalid('tool_choice requires tools.');
  }
}

/**
 * An enabled thinking budget is part of `max_tokens`, so it must be below it, except with interleaved thinking (the
 * `interleaved-thinking-*` beta), where it is the budget of all the turn's thinking blocks together and may exceed it.
 */
function checkThinkingBudget(parsed: MessagesRequest, betas: readonly string[] | undefined): void {
  const thinking = parsed.thinking as { type: string; budget_tokens?: number } | undefined;
  if (thinking?.type !== 'enabled') return;
  if (thinking.budget_tokens! < parsed.max_tokens || betas?.some((beta) => beta.startsWith('interleaved-thinking'))) return;
  throw invalid(`thinking.budget_tokens: must be less than max_tokens (${parsed.max_tokens}) unless the interleaved-thinking beta is on.`, {
    issues: [{ path: 'thinking.budget_tokens', message: 'must be less than max_tokens' }],
  });
}

/**
 * A structured-output schema (`output_config.format`, the beta's `output_format`, of type `json_schema`) that does not
 * compile is a 400 before any run, as chat's `response_format` and responses' `text.format` are: the mock would
 * answer it and a live upstream refuse it only after a run was recorded. Compiled within the request's schema budget.
 */
function checkOutputFormats(parsed: Record<string, unknown>, budget: SchemaBudget): void {
  const config = parsed.output_config;
  if (config !== null && typeof config === 'object') checkOutputFormat((config as Record<string, unknown>).format, 'output_config.format', budget);
  checkOutputFormat(parsed.output_format, 'output_format', budget);
}

function checkOutputFormat(format: unknown, where: string, budget: SchemaBudget): void {
  if (format === null || typeof format !== 'object') return;
  const { type, schema } = format as Record<string, unknown>;
  if (type !== 'json_schema' || schema === null || typeof schema !== 'object' || Array.isArray(schema)) return;
  assertCompilableSchema(schema as Record<string, unknown>, `${where}.schema`, budget);
}

/**
 * An `mcp_toolset` tool is the tools of the request's `mcp_servers` entry of that `name`: one naming no server there
 * (or sent without `mcp_servers`) the provider refuses (a 400 `invalid_request_error`), and the mock, which leaves the
 * toolset out of its plan, would answer in text as if it had none; a 400 before any run for both.
 */
function checkMcpToolsets(parsed: MessagesRequest): void {
  const servers = Array.isArray(parsed.mcp_servers) ? (parsed.mcp_servers as unknown[]) : [];
  for (const [index, tool] of (parsed.tools ?? []).entries()) {
    if (tool.type !== 'mcp_toolset') continue;
    const name = tool.mcp_server_name as string;
    if (servers.some((server) => (server as { name?: unknown } | null)?.name === name)) continue;
    const where = `tools[${index}].mcp_server_name`;
    throw invalid(`${where}: "${name}" names no server of mcp_servers; an mcp_toolset needs the mcp_servers entry of that name.`, {
      issues: [{ path: where, message: 'must name a server of mcp_servers' }],
    });
  }
}

/** The request's tools declared and its tool choice, MCP toolsets and output formats checked, within one schema budget. */
function checkedTools(parsed: MessagesRequest): DeclaredTools {
  const schemas = new SchemaBudget();
  const declared = declareTools(parsed.tools, schemas);
  checkToolChoice(parsed, declared);
  checkMcpToolsets(parsed);
  checkOutputFormats(parsed as unknown as Record<string, unknown>, schemas);
  return declared;
}

export function parseMessagesRequest(body: unknown, betas?: readonly string[]): ValidatedMessages {
  const parsed = messagesRequestSchema.parse(assertBody(body)) as MessagesRequest;
  checkThinkingBudget(parsed, betas);
  return { request: parsed, tools: checkedTools(parsed) };
}

export function parseCountTokensRequest(body: unknown): MessagesRequest {
  const parsed = countTokensSchema.parse(assertBody(body)) as MessagesRequest;
  checkedTools(parsed);
  return parsed;
}

/** A `tool_use` block as the shared checker sees it. */
export function toolUseAsCall(block: { id: string; name: string; input: unknown }): ChatToolCall {
  return { id: block.id, type: 'function', function: { name: block.name, arguments: JSON.stringify(block.input ?? {}) } };
}

/** The version and beta headers, accepting the neutral and the provider's own spelling (SPEC 4.2, 9.3). */
export function messagesHeaders(headers: Record<string, string | string[] | undefined>): { version?: string; betas?: string[] } {
  const first = (name: string) => {
    const value = headers[name];
    return Array.isArray(value) ? value.join(',') : value;
  };
  const version = (first('messages-version') ?? first('anthropic-version'))?.trim();
  const betaText = [first('messages-beta'), first('anthropic-beta')].filter(Boolean).join(',');
  const betas = [...new Set(betaText.split(',').map((token) => token.trim()).filter(Boolean))];
  if (version !== undefined && !/^[\w.-]{1,64}$/.test(version)) throw invalid('messages-version must be a version string such as 2023-06-01.');
  for (const beta of betas) if (!/^[\w.-]{1,128}$/.test(beta)) throw invalid(`Invalid beta token "${beta}".`);
  return { ...(version ? { version } : {}), ...(betas.length ? { betas } : {}) };
}
