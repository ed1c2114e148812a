/**
 * What in a request its provider runs at request time: a web search or fetch, code in a container, the tools of a
 * remote MCP server. The answer of such a request depends on the world when it was asked (the search results of that
 * day, the container's files, what the server held) and its running has effects a replay would not have, so it is
 * neither served from nor stored into the exact cache (pipeline.ts, docs/gateway.md "What is stored"). One predicate
 * per wire, each reading a field or three of a request that names none of them. The responses wire has none: it
 * refuses every hosted tool type with a 400 (wires/responses-schema.ts), and its `tool_search` only loads the tools
 * the request declares.
 */
import type { ChatRequest, MessagesRequest } from './providers/types.ts';

/** A chat request's web search (the search models): its `web_search_options`, an empty object included. */
export function chatProviderRun(request: ChatRequest): string | undefined {
  return request.web_search_options === undefined || request.web_search_options === null ? undefined : 'web_search_options';
}

/**
 * The messages wire's server tools that reach outside the request, by versioned type (`web_search_20250305`,
 * `web_fetch_20250910`, `code_execution_20250825` and their later versions). Not the tool search tools (they search
 * the request's own tools) nor the client tools the provider defines (`bash_*`, `text_editor_*`, `computer_*`,
 * `memory_*`: the client runs them and sends their results in the next request).
 */
const WORLD_SERVER_TOOL = /^(web_search|web_fetch|code_execution)_/;

/**
 * A messages request's MCP connector (`mcp_servers`, which each `mcp_toolset` tool names: messages-schema.ts refuses
 * one without), code `container`, or such a server tool.
 */
export function messagesProviderRun(request: MessagesRequest): string | undefined {
  if (request.mcp_servers !== undefined && request.mcp_servers !== null) return 'mcp_servers';
  if (request.container !== undefined && request.container !== null) return 'container';
  if (request.tools === undefined) return undefined;
  for (const tool of request.tools) {
    const type = tool.type;
    if (typeof type === 'string' && WORLD_SERVER_TOOL.test(type)) return type;
  }
  return undefined;
}
