/**
 * The mock provider on the messages and responses wires. The mock speaks every wire natively: it plans its answer
 * with the same deterministic planner as on the chat wire (text from the input, schema-valid tool calls honouring
 * tool_choice), then writes it in the wire's own shapes and event streams. Stream behaviours chosen by model name
 * (`mock-malformed`, `mock-truncated`) break the stream after it started, as on the chat wire.
 */
import { randomBytes } from 'node:crypto';
import { isDeferredTool } from '../deferred-tools.ts';
import { calledToolName, declaredToolName } from '../tool-schemas.ts';
import { messageToEvents, responseToEvents } from '../wire-replay.ts';
import { countMessagesTokens } from '../tokens-messages.ts';
import { countTokens } from '../tokens.ts';
import { mockBehaviour, mockRefusal, MOCK_PROVIDER_NAME } from './mock.ts';
import {
  ProviderError,
  type ChatCompletion,
  type ChatMessage,
  type ChatRequest,
  type ChatTool,
  type MessagesRequest,
  type MessagesResponse,
  type MessagesStreamEvent,
  type ProviderCallContext,
  type ResponseObject,
  type ResponsesRequest,
  type ResponseStreamEvent,
} from './types.ts';

type PlanChat = (request: ChatRequest, context: ProviderCallContext) => Promise<ChatCompletion>;

const hex = (bytes = 12) => randomBytes(bytes).toString('hex');

function textOfBlocks(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((block: { type?: string; text?: unknown; content?: unknown }) => (typeof block.text === 'string' ? block.text : block.type === 'tool_result' ? textOfBlocks(block.content) : ''))
    .filter(Boolean)
    .join('\n');
}

/** A stream broken the way the model name asks: after a few events, or before the terminal one. */
async function* breakAsAsked<E>(model: string, events: E[], isTerminal: (event: E) => boolean): AsyncGenerator<E> {
  const behaviour = mockBehaviour(model).stream;
  for (const [index, event] of events.entries()) {
    if (behaviour === 'malformed' && index === Math.min(3, events.length - 1)) {
      throw new ProviderError('bad_response', 'mock malformed stream event (model name contains mock-malformed)', { provider: MOCK_PROVIDER_NAME, upstreamStatus: 200 });
    }
    if (behaviour === 'truncated' && isTerminal(event)) return;
    yield event;
  }
}

/** Plan with the chat planner; the stream-breaking markers apply to the stream, not to the plan. */
function planModel(model: string): string {
  return model.replace(/mock-(malformed|truncated)/g, 'mock-planned');
}

// ---- messages wire ----

/**
 * The JSON schema a messages request asks its text to follow: `output_config.format`, or the structured-outputs beta's
 * `output_format`, which the SDKs prefer when both are sent (their `parse()` reads the text as JSON of it).
 */
function structuredOutput(request: MessagesRequest): { schema: unknown } | null {
  const config = request.output_config as { format?: unknown } | undefined;
  const format = (request.output_format ?? config?.format) as { type?: unknown; schema?: unknown } | undefined;
  return format?.type === 'json_schema' ? { schema: format.schema ?? {} } : null;
}

/**
 * The provider's server tools, by their versioned type: it runs them itself, answering a `server_tool_use` block (and
 * its result) in the message. Any other tool without an `input_schema` is a client tool the provider defines (`bash_*`,
 * `text_editor_*`, `computer_*`, `memory_*`), which the client runs from a `tool_use` block.
 */
const SERVER_TOOL_TYPE = /^(web_search|web_fetch|code_execution|tool_search_tool_(regex|bm25))_/;

/**
 * The tool a `tool_choice` of type `tool` forces when the provider defines it (no `input_schema`): the chat planner
 * calls tools by their schemas, so it knows none of these, and the mock calls it itself (`callForcedTool`).
 */
function forcedProviderTool(request: MessagesRequest): { name: string; server: boolean } | null {
  const choice = request.tool_choice;
  if (choice?.type !== 'tool') return null;
  // Typed as a function tool, the declared one may be a provider's: a versioned `type`, no `input_schema`.
  const tool = (request.tools ?? []).find((declared) => declared.name === choice.name) as { name: string; type?: unknown; input_schema?: unknown } | undefined;
  if (!tool || tool.input_schema !== undefined) return null;
  return { name: tool.name, server: SERVER_TOOL_TYPE.test(String(tool.type)) };
}

/**
 * A forced provider-defined tool called, with an empty input (the mock knows no schema for it): a server tool as a
 * `server_tool_use` block before the planned text, which the mock does not run (no result block follows); a client
 * tool as the answer's one `tool_use` block, the turn ending for the client to run it.
 */
function callForcedTool(message: MessagesResponse, forced: { name: string; server: boolean }): void {
  const tokens = 3 + countTokens(forced.name);
  if (forced.server) {
    message.content.unshift({ type: 'server_tool_use', id: `srvtoolu_${hex()}`, name: forced.name, input: {} });
    message.usage.output_tokens += tokens;
    return;
  }
  message.content = [{ type: 'tool_use', id: `toolu_${hex()}`, name: forced.name, input: {} }];
  message.stop_reason = 'tool_use';
  message.stop_sequence = null;
  message.usage.output_tokens = tokens;
}

export function messagesToChat(request: MessagesRequest): ChatRequest {
  const messages: ChatMessage[] = [];
  if (request.system) messages.push({ role: 'system', content: textOfBlocks(request.system) });
  for (const message of request.messages) {
    const blocks = typeof message.content === 'string' ? [{ type: 'text', text: message.content }] : message.content;
    const toolUses = blocks.filter((block) => block.type === 'tool_use') as unknown as Array<{ id: string; name: string; input: unknown }>;
    const results = blocks.filter((block) => block.type === 'tool_result') as unknown as Array<{ tool_use_id: string; content?: unknown }>;
    for (const result of results) messages.push({ role: 'tool', tool_call_id: result.tool_use_id, content: textOfBlocks(result.content) });
    const text = textOfBlocks(blocks.filter((block) => block.type === 'text'));
    if (message.role === 'assistant') {
      messages.push({
        role: 'assistant',
        content: text || null,
        ...(toolUses.length ? { tool_calls: toolUses.map((use) => ({ id: use.id, type: 'function' as const, function: { name: use.name, arguments: JSON.stringify(use.input ?? {}) } })) } : {}),
      });
    } else if (text || results.length === 0) {
      messages.push({ role: 'user', content: text });
    }
  }
  const tools: ChatTool[] = (request.tools ?? [])
    // Only the tools in the model's context: a deferred one is called once a tool search found it, which the mock does not run.
    .filter((tool) => tool.input_schema && !isDeferredTool(tool))
    .map((tool) => ({ type: 'function', function: { name: tool.name, ...(tool.description ? { description: tool.description } : {}), parameters: tool.input_schema } }));
  // A forced provider-defined tool is called by `planMessage`: the planner plans the text, calling none of its tools.
  const choice: MessagesRequest['tool_choice'] = forcedProviderTool(request) ? { type: 'none' } : request.tool_choice;
  const format = structuredOutput(request);
  return {
    model: planModel(request.model),
    messages,
    max_tokens: request.max_tokens,
    ...(format ? { response_format: { type: 'json_schema', json_schema: { name: 'output', schema: format.schema } } } : {}),
    ...(tools.length ? { tools } : {}),
    ...(choice?.type === 'any' ? { tool_choice: 'required' } : {}),
    ...(choice?.type === 'none' ? { tool_choice: 'none' } : {}),
    ...(choice?.type === 'tool' ? { tool_choice: { type: 'function', function: { name: choice.name } } } : {}),
    ...(choice?.disable_parallel_tool_use ? { parallel_tool_calls: false } : {}),
    // No `stop`: the stop sequences are applied to the planned text here (`chatToMessage`), which knows which one
    // matched, as the messages wire reports it.
  };
}

/** Where the earliest of the stop sequences starts in `text`, and which it is; null when none occurs. */
function firstStop(text: string, stops: unknown): { at: number; sequence: string } | null {
  let found: { at: number; sequence: string } | null = null;
  for (const sequence of Array.isArray(stops) ? stops : []) {
    if (typeof sequence !== 'string' || sequence === '') continue;
    const at = text.indexOf(sequence);
    if (at >= 0 && (found === null || at < found.at)) found = { at, sequence };
  }
  return found;
}

const STOP_REASONS: Record<string, string> = { stop: 'end_turn', tool_calls: 'tool_use', length: 'max_tokens' };

/**
 * The planned chat answer as a message. A text that holds one of the request's stop sequences ends before it, with
 * `stop_reason: "stop_sequence"` and the sequence, as a messages upstream answers (the chat planner's `stop` ends the
 * text too, but says only `stop`); its output tokens are those of the text kept and the sequence, which the model
 * generated and the provider bills though it is not in the answer: a text stopped before its first character is no
 * answer of 0 output tokens.
 */
export function chatToMessage(completion: ChatCompletion, model: string, stopSequences?: unknown): MessagesResponse {
  const choice = completion.choices[0]!;
  const content: MessagesResponse['content'] = [];
  let text = choice.message.content;
  const stop = text ? firstStop(text, stopSequences) : null;
  let outputTokens = completion.usage?.completion_tokens ?? 0;
  if (text && stop) {
    text = text.slice(0, stop.at);
    outputTokens = countTokens(text + stop.sequence);
  }
  if (text) content.push({ type: 'text', text });
  for (const call of choice.message.tool_calls ?? []) {
    content.push({ type: 'tool_use', id: `toolu_${call.id.replace(/^call_/, '').slice(0, 24)}`, name: call.function.name, input: JSON.parse(call.function.arguments || '{}') });
  }
  return {
    id: `msg_${hex()}`,
    type: 'message',
    role: 'assistant',
    model,
    content,
    stop_reason: stop ? 'stop_sequence' : (STOP_REASONS[choice.finish_reason] ?? 'end_turn'),
    stop_sequence: stop ? stop.sequence : null,
    usage: { input_tokens: completion.usage?.prompt_tokens ?? 0, output_tokens: outputTokens },
  };
}

/**
 * The planned answer as a message whose input tokens are the wire's own count of the request (count_tokens'), as a
 * messages upstream's usage and count agree: the planner's prompt is the request as chat text, without its images and
 * documents (a PDF and an image by address, 3,200 tokens to count_tokens, were 8 in the answer and the run).
 */
async function planMessage(plan: PlanChat, request: MessagesRequest, context: ProviderCallContext): Promise<MessagesResponse> {
  const message = chatToMessage(await plan(messagesToChat(request), context), request.model, request.stop_sequences);
  message.usage.input_tokens = countMessagesTokens(request);
  const forced = forcedProviderTool(request);
  if (forced) callForcedTool(message, forced);
  withThinking(message, request);
  return message;
}

const MOCK_THINKING = 'The mock planned its answer from the conversation and the declared tools.';
/** Counted on first use: the tokenizer loads its ranks lazily, and importing the mock should not load them. */
let mockThinkingTokens: number | undefined;

/**
 * With thinking on (`enabled`, or `adaptive`, where the model chooses and the mock always thinks), the answer leads with
 * a thinking block and its signature, as the provider's does (the SDKs' `thinking` and `signature` events come from
 * it, and a client sends it back with its tool results); its text is empty with `display: "omitted"`, the signature
 * kept. Its tokens are output tokens, as the provider bills them: those of the thinking done, shown or not (the
 * provider bills hidden thinking too).
 */
function withThinking(message: MessagesResponse, request: MessagesRequest): void {
  const thinking = request.thinking as { type?: unknown; display?: unknown } | undefined;
  if (thinking?.type !== 'enabled' && thinking?.type !== 'adaptive') return;
  const text = thinking.display === 'omitted' ? '' : MOCK_THINKING;
  message.content.unshift({ type: 'thinking', thinking: text, signature: randomBytes(48).toString('base64') });
  mockThinkingTokens ??= countTokens(MOCK_THINKING);
  message.usage.output_tokens += mockThinkingTokens;
}

/**
 * Why the mock refuses a messages request, as an upstream refuses what its model cannot do (a 400
 * `upstream_rejected`); null when it answers it. The mock connects to no MCP server and runs no code container: a text
 * answer to a request naming `mcp_servers` (whose tools only the provider calls) or a `container` would be silently
 * less than was asked (SPEC 4.2), so it names the field. A forced server tool is answered as docs/providers.md says.
 */
function mockMessagesRefusal(request: MessagesRequest): ProviderError | null {
  if (request.mcp_servers !== undefined && request.mcp_servers !== null) {
    return mockRefusal('mcp_servers', 'the mock provider connects to no MCP server; leave mcp_servers out or configure a live provider');
  }
  if (request.container !== undefined && request.container !== null) {
    return mockRefusal('container', 'the mock provider runs no container; leave container out or configure a live provider');
  }
  return null;
}

export async function mockMessages(plan: PlanChat, request: MessagesRequest, context: ProviderCallContext): Promise<MessagesResponse> {
  const behaviour = mockBehaviour(request.model);
  if (behaviour.stream) {
    throw new ProviderError('bad_response', `mock ${behaviour.stream} answer: the upstream body is not valid JSON`, { provider: MOCK_PROVIDER_NAME, upstreamStatus: 200 });
  }
  const refusal = mockMessagesRefusal(request);
  if (refusal) throw refusal;
  return planMessage(plan, request, context);
}

export async function mockStreamMessages(plan: PlanChat, request: MessagesRequest, context: ProviderCallContext): Promise<AsyncIterable<MessagesStreamEvent>> {
  const refusal = mockMessagesRefusal(request);
  if (refusal) throw refusal;
  const message = await planMessage(plan, request, context);
  return breakAsAsked(request.model, messageToEvents(message), (event) => event.type === 'message_stop');
}

// ---- responses wire ----

function inputMessages(request: ResponsesRequest): ChatMessage[] {
  const messages: ChatMessage[] = [];
  if (request.instructions) messages.push({ role: 'system', content: request.instructions });
  if (typeof request.input === 'string') return [...messages, { role: 'user', content: request.input }];
  for (const item of (request.input as Array<Record<string, unknown>>) ?? []) {
    if (item.type === 'function_call') {
      // A namespace's tool by its declared name, namespace and all: calls of two namespaces' tools are two conversations.
      messages.push({ role: 'assistant', content: null, tool_calls: [{ id: String(item.call_id), type: 'function', function: { name: calledToolName(item), arguments: String(item.arguments ?? '{}') } }] });
    } else if (item.type === 'custom_tool_call') {
      // The planner sees a custom tool as a function of one string `input` (responsesToChat): its call is one too.
      const args = JSON.stringify({ input: String(item.input ?? '') });
      messages.push({ role: 'assistant', content: null, tool_calls: [{ id: String(item.call_id), type: 'function', function: { name: calledToolName(item), arguments: args } }] });
    } else if (item.type === 'function_call_output' || item.type === 'custom_tool_call_output') {
      messages.push({ role: 'tool', tool_call_id: String(item.call_id), content: typeof item.output === 'string' ? item.output : JSON.stringify(item.output) });
    } else if (typeof item.role === 'string') {
      const content = typeof item.content === 'string' ? item.content : textOfBlocks(item.content);
      messages.push({ role: item.role === 'developer' ? 'system' : item.role, content });
    }
  }
  return messages;
}

/** A function or custom tool of a responses request, as svc declares it (tool-schemas.ts): a namespace's as `namespace.name`. */
interface MockTool {
  declared: string;
  namespace: string | undefined;
  tool: Record<string, unknown>;
}

function declaredResponsesTools(request: ResponsesRequest): MockTool[] {
  const declared: MockTool[] = [];
  const add = (tool: Record<string, unknown>, namespace?: string): void => {
    if (tool.type === 'function' || tool.type === 'custom') declared.push({ declared: declaredToolName(namespace, String(tool.name)), namespace, tool });
  };
  for (const entry of request.tools ?? []) {
    if (entry.type === 'namespace' && Array.isArray(entry.tools)) for (const member of entry.tools as Array<Record<string, unknown>>) add(member, String(entry.name));
    else add(entry);
  }
  return declared;
}

/**
 * The declared tool a `tool_choice` entry (`{type, name}`) chooses: by its declared name, else (a namespace's tool is
 * chosen by its own name: responses-schema.ts) the namespace's tool of that name and kind.
 */
function chosenTool(tools: readonly MockTool[], entry: { type?: unknown; name?: unknown }): MockTool | undefined {
  return tools.find((tool) => tool.declared === entry.name) ?? tools.find((tool) => tool.namespace !== undefined && tool.tool.name === entry.name && tool.tool.type === entry.type);
}

export function responsesToChat(request: ResponsesRequest): ChatRequest {
  const declared = declaredResponsesTools(request);
  const choice = request.tool_choice as string | { type?: string; name?: string; mode?: string; tools?: Array<{ type?: string; name?: string }> } | undefined;
  const entries = typeof choice !== 'object' ? [] : choice.type === 'allowed_tools' ? (choice.tools ?? []) : [choice];
  const chosen = entries.map((entry) => chosenTool(declared, entry));
  const tools: ChatTool[] = declared
    // The tools in the model's context: not a deferred one (which a tool search would load) nor a namespace's (the
    // mock runs no tool search), unless the choice names it, which the model is then to call.
    .filter((tool) => (tool.namespace === undefined && !isDeferredTool(tool.tool)) || chosen.includes(tool))
    .map(({ declared: name, tool }) =>
      tool.type === 'custom'
        ? { type: 'function', function: { name, parameters: { type: 'object', properties: { input: { type: 'string' } }, required: ['input'] } } }
        : { type: 'function', function: { name, parameters: (tool.parameters as Record<string, unknown> | undefined) ?? { type: 'object' } } },
    );
  const named = (index: number) => ({ type: 'function' as const, function: { name: chosen[index]?.declared ?? String(entries[index]?.name) } });
  const format = (request.text as { format?: { type?: string; name?: string; schema?: unknown } } | undefined)?.format;
  return {
    model: planModel(request.model),
    messages: inputMessages(request),
    ...(tools.length ? { tools } : {}),
    ...(typeof choice === 'string' ? { tool_choice: choice } : {}),
    ...(typeof choice === 'object' && choice.name ? { tool_choice: named(0) } : {}),
    ...(typeof choice === 'object' && choice.type === 'allowed_tools' ? { tool_choice: { type: 'allowed_tools', allowed_tools: { mode: choice.mode, tools: entries.map((_, index) => named(index)) } } } : {}),
    ...(request.parallel_tool_calls === false ? { parallel_tool_calls: false } : {}),
    ...(typeof request.max_output_tokens === 'number' ? { max_tokens: request.max_output_tokens } : {}),
    ...(format?.type === 'json_schema' ? { response_format: { type: 'json_schema', json_schema: { name: format.name, schema: format.schema } } } : {}),
    ...(format?.type === 'json_object' ? { response_format: { type: 'json_object' } } : {}),
  };
}

const MOCK_REASONING = 'The mock planned its answer from the input and the declared tools.';
/** The mock's reasoning as an opaque blob, the shape of the provider's `encrypted_content`. */
const MOCK_ENCRYPTED_REASONING = Buffer.from(`svc-mock:${MOCK_REASONING}`).toString('base64');
/** Counted on first use, as the thinking's tokens are (the tokenizer loads its ranks lazily). */
let mockReasoningTokens: number | undefined;

export function chatToResponse(completion: ChatCompletion, request: ResponsesRequest, now: number): ResponseObject {
  const choice = completion.choices[0]!;
  const declared = new Map(declaredResponsesTools(request).map((tool) => [tool.declared, tool]));
  const output: ResponseObject['output'] = [];
  const reasoning = request.reasoning as { effort?: string | null; summary?: string | null } | undefined;
  // The reasoning the mock shows a summary of is billed as the provider bills reasoning: output tokens, counted in
  // `reasoning_tokens` too.
  let reasoningTokens = 0;
  if (reasoning?.summary) {
    // Asked for, the reasoning comes back encrypted too (opaque to the client, as the provider's is), which a
    // `store: false` client sends back next turn; left out, the mock's reasoning would be silently less than asked.
    const encrypted = Array.isArray(request.include) && request.include.includes('reasoning.encrypted_content');
    output.push({
      type: 'reasoning',
      id: `rs_${hex()}`,
      summary: [{ type: 'summary_text', text: MOCK_REASONING }],
      ...(encrypted ? { encrypted_content: MOCK_ENCRYPTED_REASONING } : {}),
    });
    reasoningTokens = mockReasoningTokens ??= countTokens(MOCK_REASONING);
  }
  // Only a text is cut off by the token limit (the mock's tool calls are whole): its message is `incomplete`, as an
  // upstream's is and as svc closes a live item a `response.incomplete` leaves open.
  const incomplete = choice.finish_reason === 'length';
  if (choice.message.content) {
    output.push({
      type: 'message',
      id: `msg_${hex()}`,
      status: incomplete ? 'incomplete' : 'completed',
      role: 'assistant',
      content: [{ type: 'output_text', text: choice.message.content, annotations: [], logprobs: [] }],
    });
  }
  for (const call of choice.message.tool_calls ?? []) {
    // A namespace's tool is called by its own name, with its namespace.
    const tool = declared.get(call.function.name);
    const called = tool ? { ...(tool.namespace === undefined ? {} : { namespace: tool.namespace }), name: String(tool.tool.name) } : { name: call.function.name };
    if (tool?.tool.type === 'custom') {
      const input = (JSON.parse(call.function.arguments || '{}') as { input?: unknown }).input;
      output.push({ type: 'custom_tool_call', id: `ctc_${hex()}`, call_id: call.id, ...called, input: String(input ?? '') });
    } else {
      output.push({ type: 'function_call', id: `fc_${hex()}`, call_id: call.id, ...called, arguments: call.function.arguments, status: 'completed' });
    }
  }
  const usage = completion.usage;
  return {
    id: `resp_${hex()}`,
    object: 'response',
    created_at: Math.floor(now / 1000),
    status: incomplete ? 'incomplete' : 'completed',
    error: null,
    incomplete_details: incomplete ? { reason: 'max_output_tokens' } : null,
    instructions: request.instructions ?? null,
    max_output_tokens: request.max_output_tokens ?? null,
    // Echoed though the mock runs no built-in tool, the only calls it bounds (docs/gateway.md).
    max_tool_calls: request.max_tool_calls ?? null,
    model: request.model,
    output,
    parallel_tool_calls: request.parallel_tool_calls !== false,
    previous_response_id: null,
    // The request's own settings, as an upstream echoes them (`store` stays false: the mock keeps no response).
    reasoning: { effort: reasoning?.effort ?? null, summary: reasoning?.summary ?? null },
    store: false,
    temperature: typeof request.temperature === 'number' ? request.temperature : 1,
    text: { format: { type: 'text' }, ...(request.text as Record<string, unknown> | undefined) },
    tool_choice: request.tool_choice ?? 'auto',
    tools: (request.tools ?? []).map((tool) =>
      tool.type === 'function'
        ? { type: 'function', name: tool.name, description: tool.description ?? null, parameters: tool.parameters ?? null, strict: tool.strict ?? true }
        : tool,
    ),
    top_p: typeof request.top_p === 'number' ? request.top_p : 1,
    truncation: 'disabled',
    usage: {
      input_tokens: usage?.prompt_tokens ?? 0,
      input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 },
      output_tokens: (usage?.completion_tokens ?? 0) + reasoningTokens,
      output_tokens_details: { reasoning_tokens: reasoningTokens },
      total_tokens: (usage?.total_tokens ?? 0) + reasoningTokens,
    },
    metadata: request.metadata ?? {},
  };
}

/**
 * Why the mock refuses a responses request, as an upstream refuses what its model cannot do (a 400
 * `upstream_rejected`); null when it answers it. The mock has no log probabilities: an output text with `logprobs: []`
 * for the ones asked would be silently less than was asked (SPEC 4.2), so it names the include entry.
 */
function mockResponsesRefusal(request: ResponsesRequest): ProviderError | null {
  const include = request.include;
  if (Array.isArray(include) && include.includes('message.output_text.logprobs')) {
    return mockRefusal('include', 'the mock provider has no log probabilities to give for message.output_text.logprobs; leave it out or configure a live provider');
  }
  return null;
}

export async function mockResponses(plan: PlanChat, request: ResponsesRequest, context: ProviderCallContext, now: number): Promise<ResponseObject> {
  const behaviour = mockBehaviour(request.model);
  if (behaviour.stream) {
    throw new ProviderError('bad_response', `mock ${behaviour.stream} answer: the upstream body is not valid JSON`, { provider: MOCK_PROVIDER_NAME, upstreamStatus: 200 });
  }
  const refusal = mockResponsesRefusal(request);
  if (refusal) throw refusal;
  return chatToResponse(await plan(responsesToChat(request), context), request, now);
}

export async function mockStreamResponses(plan: PlanChat, request: ResponsesRequest, context: ProviderCallContext, now: number): Promise<AsyncIterable<ResponseStreamEvent>> {
  const refusal = mockResponsesRefusal(request);
  if (refusal) throw refusal;
  const response = chatToResponse(await plan(responsesToChat(request), context), request, now);
  return breakAsAsked(request.model, responseToEvents(response), (event) => event.type === 'response.completed' || event.type === 'response.incomplete');
}
