/**
 * Tool search: a tool with `defer_loading: true` is in the request's catalogue but not (or, on the responses wire, by
 * name and description only) in the model's context; the model loads it only once a tool search tool finds it (the
 * messages wire's `tool_search_tool_regex_*` / `..._bm25_*`, the responses wire's `tool_search`). So its schema costs
 * no input tokens until then, and a model (the mock's too) calls it only after a search returned it.
 */
import { z } from 'zod';

export const isDeferredTool = (tool: object): boolean => (tool as { defer_loading?: unknown }).defer_loading === true;

/**
 * A request's tools are bounded because each costs svc CPU on the request's path: a tool the model has in context has
 * its schema compiled (tool-schemas.ts), so at most MAX_TOOLS_IN_CONTEXT of them. A deferred tool costs a name until a
 * call names it, so a catalogue may hold up to MAX_TOOLS in all (the messages provider's own bound for a tool search
 * catalogue; the responses wire takes the same).
 */
export const MAX_TOOLS_IN_CONTEXT = 128;
export const MAX_TOOLS = 10_000;

/** The tools an entry of a request's `tools` declares: a responses-wire `namespace`'s tools, else the entry itself. */
function declaredBy(entry: object): readonly unknown[] {
  const { type, tools } = entry as { type?: unknown; tools?: unknown };
  return type === 'namespace' && Array.isArray(tools) ? tools : [entry];
}

/** A wire's `tools` array of `tool`, within both bounds (a namespace's tools counted each). */
export function boundedTools<T extends z.ZodType<object>>(tool: T) {
  return z
    .array(tool)
    .max(MAX_TOOLS, `at most ${MAX_TOOLS} tools, of which at most ${MAX_TOOLS_IN_CONTEXT} without defer_loading: true`)
    .superRefine((list, ctx) => {
      let all = 0;
      let inContext = 0;
      for (const entry of list) {
        for (const item of declaredBy(entry)) {
          all += 1;
          if (typeof item !== 'object' || item === null || !isDeferredTool(item)) inContext += 1;
        }
      }
      if (all > MAX_TOOLS) ctx.addIssue({ code: 'custom', message: `at most ${MAX_TOOLS} tools in all, a namespace's tools counted each` });
      else if (inContext > MAX_TOOLS_IN_CONTEXT) {
        ctx.addIssue({ code: 'custom', message: `at most ${MAX_TOOLS_IN_CONTEXT} tools without defer_loading: true (a tool search catalogue marks the rest defer_loading: true, up to ${MAX_TOOLS} tools in all)` });
      }
    });
}
