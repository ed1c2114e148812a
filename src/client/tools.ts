/**
 * Traced tools (SPEC 4.20): a tool function wrapped so that each call becomes evidence on the run that asked for
 * it, in this order:
 *   1. cache check: only when the side-effect level is 1 or lower and ttlSeconds is above 0;
 *   2. trace `tool.called`;
 *   3. trace `side_effect.planned`: level 2 or higher, before the tool runs;
 *   4. execute;
 *   5. trace `tool.completed`;
 *   6. cache store (same condition as 1).
 * Tracing and cache failures are swallowed (evidence must never break the app); errors of the tool itself
 * propagate. Without a run id the tool runs untraced. Each evidence call is bounded (the client's `traceTimeoutMs`)
 * and ends at once when the caller's signal aborts: a call aborted before the tool ran rejects with the abort and
 * the tool never runs; once it ran, the abort only gives up the evidence still to write, and its result is returned.
 * Arguments must be plain JSON, and an `idempotencyKey` resolver must return a trimmed string of at most 120
 * characters: both are checked before anything happens.
 */

/** Default side-effect level of a tool that does not declare one (SPEC 2.3). */
export const DEFAULT_SIDE_EFFECT_LEVEL = 3;
export const IDEMPOTENCY_KEY_MAX = 120;

export interface ToolDefinition<A> {
  name: string;
  /** 0 (pure read) to 4 (irreversible); default 3. */
  sideEffectLevel?: number;
  /** Tool-result cache lifetime; 0 (default) never consults the cache. */
  ttlSeconds?: number;
  /** Schema fingerprint sent with cache calls (a changed schema never reuses old results). */
  schemaFp?: string;
  idempotencyKey?: (args: A) => string;
}

/**
 * What the traced wrapper needs from the client: trace and cache calls (each may throw; failures are swallowed), each
 * given the caller's signal, if any.
 */
export interface ToolTracer {
  trace(runId: string, type: string, payload: Record<string, unknown>, signal?: AbortSignal): Promise<unknown>;
  cacheCheck(body: { toolName: string; schemaFp?: string; args: unknown }, signal?: AbortSignal): Promise<{ hit: boolean; result?: unknown }>;
  cacheStore(body: { toolName: string; schemaFp?: string; args: unknown; result: unknown; ttlSeconds: number }, signal?: AbortSignal): Promise<unknown>;
}

/** How one call of a traced tool is made: the run it belongs to, and the caller's signal. */
export interface ToolCallContext {
  runId?: string | null;
  signal?: AbortSignal;
}

/** Plain JSON: null, booleans, finite numbers, strings, arrays (dense) and plain objects of those, without cycles. */
export function isPlainJson(value: unknown, seen: Set<object> = new Set()): boolean {
  if (value === null || typeof value === 'boolean' || typeof value === 'string') return true;
  if (typeof value === 'number') return Number.isFinite(value);
  if (typeof value !== 'object') return false;
  if (seen.has(value)) return false;
  seen.add(value);
  let ok: boolean;
  // A hole (`[1, , 3]`) or a named property of an array is not JSON: JSON.stringify sends null for one, drops the other.
  if (Array.isArray(value)) ok = Object.keys(value).length === value.length && value.every((item) => isPlainJson(item, seen));
  else {
    const proto = Object.getPrototypeOf(value);
    ok = (proto === Object.prototype || proto === null) && Object.values(value).every((item) => isPlainJson(item, seen));
  }
  seen.delete(value);
  return ok;
}

/**
 * Whether a string holds more than `max` characters (code points), as svc measures a key (SPEC 8): `length` counts
 * UTF-16 units, two for an emoji. A string of at most `max` units fits, so only a longer one is counted.
 */
function longerThan(text: string, max: number): boolean {
  if (text.length <= max) return false;
  let count = 0;
  for (const _character of text) if (++count > max) return true;
  return false;
}

async function swallow<T>(work: () => Promise<T>): Promise<T | undefined> {
  try {
    return await work();
  } catch {
    return undefined;
  }
}

export function tracedTool<A, R>(
  tracer: ToolTracer,
  definition: ToolDefinition<A>,
  fn: (args: A) => R | Promise<R>,
): (args: A, context?: ToolCallContext) => Promise<R> {
  const level = definition.sideEffectLevel ?? DEFAULT_SIDE_EFFECT_LEVEL;
  if (!Number.isInteger(level) || level < 0 || level > 4) throw new RangeError('sideEffectLevel must be an integer from 0 to 4');
  const ttlSeconds = definition.ttlSeconds ?? 0;
  const cached = level <= 1 && ttlSeconds > 0;
  const fp = definition.schemaFp ? { schemaFp: definition.schemaFp } : {};

  return async (args, context = {}) => {
    if (!isPlainJson(args)) throw new TypeError(`arguments of tool ${definition.name} must be plain JSON`);
    let idempotencyKey: string | undefined;
    if (definition.idempotencyKey) {
      const key = definition.idempotencyKey(args);
      if (typeof key !== 'string' || key.length === 0 || key !== key.trim() || longerThan(key, IDEMPOTENCY_KEY_MAX)) {
        throw new TypeError(`idempotencyKey of tool ${definition.name} must be a trimmed, non-empty string of at most ${IDEMPOTENCY_KEY_MAX} characters`);
      }
      idempotencyKey = key;
    }
    const { runId, signal } = context;
    signal?.throwIfAborted();
    if (!runId) return fn(args);

    if (cached) {
      const lookup = await swallow(() => tracer.cacheCheck({ toolName: definition.name, ...fp, args }, signal));
      signal?.throwIfAborted();
      if (lookup?.hit === true) {
        await swallow(() => tracer.trace(runId, 'tool.called', { name: definition.name, args, sideEffectLevel: level }, signal));
        await swallow(() => tracer.trace(runId, 'tool.completed', { name: definition.name, result: lookup.result ?? null, cached: true }, signal));
        return lookup.result as R;
      }
    }
    await swallow(() => tracer.trace(runId, 'tool.called', { name: definition.name, args, sideEffectLevel: level }, signal));
    if (level >= 2) {
      await swallow(() =>
        tracer.trace(runId, 'side_effect.planned', { toolName: definition.name, level, payload: args, ...(idempotencyKey ? { idempotencyKey } : {}) }, signal),
      );
    }
    // The caller gave up while the evidence was pending: the tool (level 2 and up: its side effect) must not run.
    signal?.throwIfAborted();
    const result = await fn(args);
    await swallow(() => tracer.trace(runId, 'tool.completed', { name: definition.name, result: (result ?? null) as unknown }, signal));
    if (cached) await swallow(() => tracer.cacheStore({ toolName: definition.name, ...fp, args, result, ttlSeconds }, signal));
    return result;
  };
}
