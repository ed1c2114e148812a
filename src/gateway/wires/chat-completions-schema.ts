/**
 * The chat-completions request body (SPEC 4.2; field shapes from the wire's OpenAPI `CreateChatCompletionRequest`).
 * Known fields are type-checked; fields svc does not know pass through untouched to compatible providers.
 * Top-level `null`s count as omitted, as the official clients send them.
 */
import { z } from 'zod';
import { invalid } from '../../core/errors.ts';
import { modelField } from '../../evidence/model-field.ts';
import type { ChatRequest } from '../providers/types.ts';
import { assertCompilableSchema, compileTools, SchemaBudget, type DeclaredTools } from '../tool-schemas.ts';

const text = z.string();
const contentPart = z.looseObject({ type: z.string().min(1) });
// The OpenAPI document gives every role's array of content parts minItems 1: an empty one says nothing to the model.
const content = z.union([text, z.array(contentPart).min(1, 'content must be a string or a non-empty array of content parts')]);

const toolCall = z.looseObject({
  id: z.string().min(1),
  type: z.literal('function'),
  function: z.looseObject({ name: z.string().min(1), arguments: z.string() }),
});

const message = z.discriminatedUnion('role', [
  z.looseObject({ role: z.literal('system'), content, name: z.string().optional() }),
  z.looseObject({ role: z.literal('developer'), content, name: z.string().optional() }),
  z.looseObject({ role: z.literal('user'), content, name: z.string().optional() }),
  z.looseObject({
    role: z.literal('assistant'),
    content: content.nullable().optional(),
    name: z.string().optional(),
    refusal: z.string().nullable().optional(),
    tool_calls: z.array(toolCall).optional(),
  }),
  z.looseObject({ role: z.literal('tool'), content, tool_call_id: z.string().min(1) }),
  z.looseObject({ role: z.literal('function'), content: text.nullable(), name: z.string().min(1) }),
]);

const functionName = z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/, 'function names are 1-64 letters, digits, _ or -');

/**
 * Custom tools (free-text input) are the OpenAPI document's too, but svc checks each tool call against its declared
 * function's schema before emitting it (docs/gateway.md), and a custom call has none: refused by name, not as an
 * unexplained 'Invalid input'. The responses wire takes them.
 */
const FUNCTION_TOOLS_ONLY = "only tools of type 'function' are taken on this wire (custom tools are taken on /v1/responses)";

const tool = z.looseObject({
  type: z.literal('function', { error: FUNCTION_TOOLS_ONLY }),
  function: z.looseObject({
    name: functionName,
    description: z.string().optional(),
    parameters: z.record(z.string(), z.unknown()).optional(),
    strict: z.boolean().nullable().optional(),
  }),
});

const namedFunction = z.looseObject({ type: z.literal('function'), function: z.looseObject({ name: functionName }) });

const toolChoice = z.union(
  [
    z.enum(['none', 'auto', 'required']),
    namedFunction,
    // A subset of the declared tools the model may call (`auto`) or must call one of (`required`).
    z.looseObject({
      type: z.literal('allowed_tools'),
      allowed_tools: z.looseObject({ mode: z.enum(['auto', 'required']), tools: z.array(namedFunction).min(1, 'allowed_tools.tools must name at least one tool') }),
    }),
  ],
  { error: `tool_choice must be 'none', 'auto', 'required', a named function or allowed_tools; ${FUNCTION_TOOLS_ONLY}` },
);

const responseFormat = z.discriminatedUnion('type', [
  z.looseObject({ type: z.literal('text') }),
  z.looseObject({ type: z.literal('json_object') }),
  z.looseObject({
    type: z.literal('json_schema'),
    json_schema: z.looseObject({
      name: z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/),
      description: z.string().optional(),
      schema: z.record(z.string(), z.unknown()).optional(),
      strict: z.boolean().nullable().optional(),
    }),
  }),
]);

/**
 * The values of the OpenAPI document's `ReasoningEffort` and `ServiceTier` (the chat and responses wires share them):
 * a value the reference document and the official clients send is passed on, never refused as unknown.
 */
export const REASONING_EFFORTS = ['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'] as const;
export const SERVICE_TIERS = ['auto', 'default', 'flex', 'scale', 'priority', 'fast'] as const;

export const chatRequestSchema = z.looseObject({
  model: modelField,
  messages: z.array(message).min(1, 'messages must be a non-empty array'),
  stream: z.boolean().optional(),
  stream_options: z.looseObject({ include_usage: z.boolean().optional() }).optional(),
  temperature: z.number().min(0).max(2).optional(),
  top_p: z.number().min(0).max(1).optional(),
  n: z.number().int().min(1).max(128).optional(),
  max_tokens: z.number().int().min(1).optional(),
  max_completion_tokens: z.number().int().min(1).optional(),
  reasoning_effort: z.enum(REASONING_EFFORTS).optional(),
  verbosity: z.enum(['low', 'medium', 'high']).optional(),
  service_tier: z.enum(SERVICE_TIERS).optional(),
  // The OpenAPI document's StopConfiguration: a string, or 1 to 4 of them (an empty list is its 400 too).
  stop: z.union([z.string(), z.array(z.string()).min(1).max(4)]).optional(),
  parallel_tool_calls: z.boolean().optional(),
  seed: z.number().int().optional(),
  frequency_penalty: z.number().min(-2).max(2).optional(),
  presence_penalty: z.number().min(-2).max(2).optional(),
  logit_bias: z.record(z.string(), z.number().min(-100).max(100)).optional(),
  logprobs: z.boolean().optional(),
  top_logprobs: z.number().int().min(0).max(20).optional(),
  prompt_cache_key: z.string().max(1024).optional(),
  user: z.string().max(1024).optional(),
  store: z.boolean().optional(),
  metadata: z.record(z.string().max(64), z.string().max(512)).optional(),
  response_format: responseFormat.optional(),
  tools: z.array(tool).max(128).optional(),
  tool_choice: toolChoice.optional(),
});

export interface ValidatedChat {
  request: ChatRequest;
  tools: DeclaredTools;
  includeUsage: boolean;
}

/** Drop top-level nulls (the official clients send `null` for unset optional fields). */
function withoutNulls(body: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(body)) if (value !== null) out[key] = value;
  return out;
}

export function parseChatRequest(body: unknown): ValidatedChat {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw invalid('The request body must be a JSON object.');
  const parsed = chatRequestSchema.parse(withoutNulls(body as Record<string, unknown>));
  if (parsed.metadata && Object.keys(parsed.metadata).length > 16) throw invalid('metadata has at most 16 keys.', { param: 'metadata' });
  // The OpenAPI document: "`logprobs` must be set to `true` if this parameter is used"; refused here, as tool_choice
  // without tools is, rather than left for the upstream (and the mock) to refuse or ignore.
  if (parsed.top_logprobs !== undefined && parsed.logprobs !== true) {
    throw invalid('top_logprobs requires logprobs: true.', { param: 'top_logprobs' });
  }
  const schemas = new SchemaBudget();
  const tools = compileTools(parsed.tools as ChatRequest['tools'], schemas);
  const choice = parsed.tool_choice;
  if (choice !== undefined && choice !== 'none' && tools.names.size === 0 && parsed.tools === undefined) {
    throw invalid('tool_choice requires tools.', { param: 'tool_choice' });
  }
  if (typeof choice === 'object') {
    for (const named of choice.type === 'function' ? [choice] : choice.allowed_tools.tools) {
      if (!tools.names.has(named.function.name)) {
        throw invalid(`tool_choice names "${named.function.name}", which is not a declared tool.`, { param: 'tool_choice' });
      }
    }
  }
  if (parsed.response_format?.type === 'json_schema' && parsed.response_format.json_schema.schema) {
    assertCompilableSchema(parsed.response_format.json_schema.schema, 'response_format.json_schema.schema', schemas);
  }
  return { request: parsed as ChatRequest, tools, includeUsage: parsed.stream_options?.include_usage === true };
}
