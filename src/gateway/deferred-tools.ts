/**
 * Tool search on the messages wire: a tool with `defer_loading: true` is in the request's catalogue but not in the
 * model's context; the model sees it only once a tool search tool (`tool_search_tool_regex_*`, `..._bm25_*`) finds it.
 * So it costs no input tokens until then, and a model (the mock's too) calls it only after a search returned it.
 */
export const isDeferredTool = (tool: object): boolean => (tool as { defer_loading?: unknown }).defer_loading === true;
