/**
 * List prices per million tokens (USD), by model id or id prefix, for the cost of live attempts. A model that is
 * not in the table is flagged (`priced: false`) and costs 0 in rollups, which count it among their unpriced runs: a
 * guessed price would be evidence we cannot stand behind. The mock provider is free. The table is documented in
 * docs/gateway.md ("Cost").
 */
import type { RunUsage } from '../evidence/types.ts';

export interface ModelPrice {
  inputPerMillion: number;
  outputPerMillion: number;
  /** Input read from the provider's prompt cache; absent: priced as input. */
  cacheReadPerMillion?: number;
  /** Input written to the provider's prompt cache for 5 minutes, and for 1 hour; absent: priced as input. */
  cacheWritePerMillion?: number;
  cacheWrite1hPerMillion?: number;
}

/**
 * A messages-family price: its prompt cache reads cost a tenth of input, its writes 1.25 times input (kept 5 minutes)
 * or twice (kept an hour), as the family's published prices are.
 */
function messagesFamily(inputPerMillion: number, outputPerMillion: number): ModelPrice {
  const rate = (factor: number) => Math.round(inputPerMillion * factor * 1e6) / 1e6;
  return { inputPerMillion, outputPerMillion, cacheReadPerMillion: rate(0.1), cacheWritePerMillion: rate(1.25), cacheWrite1hPerMillion: rate(2) };
}

/** Longest matching prefix wins, so dated snapshots (`gpt-4o-2024-08-06`) price as their family. */
const PRICES: ReadonlyArray<[prefix: string, price: ModelPrice]> = [
  ['gpt-5-nano', { inputPerMillion: 0.05, outputPerMillion: 0.4, cacheReadPerMillion: 0.005 }],
  ['gpt-5-mini', { inputPerMillion: 0.25, outputPerMillion: 2, cacheReadPerMillion: 0.025 }],
  ['gpt-5', { inputPerMillion: 1.25, outputPerMillion: 10, cacheReadPerMillion: 0.125 }],
  ['gpt-4.1-nano', { inputPerMillion: 0.1, outputPerMillion: 0.4, cacheReadPerMillion: 0.025 }],
  ['gpt-4.1-mini', { inputPerMillion: 0.4, outputPerMillion: 1.6, cacheReadPerMillion: 0.1 }],
  ['gpt-4.1', { inputPerMillion: 2, outputPerMillion: 8, cacheReadPerMillion: 0.5 }],
  ['gpt-4o-mini', { inputPerMillion: 0.15, outputPerMillion: 0.6, cacheReadPerMillion: 0.075 }],
  ['gpt-4o', { inputPerMillion: 2.5, outputPerMillion: 10, cacheReadPerMillion: 1.25 }],
  ['gpt-4-turbo', { inputPerMillion: 10, outputPerMillion: 30 }],
  ['gpt-3.5-turbo', { inputPerMillion: 0.5, outputPerMillion: 1.5 }],
  ['o1-mini', { inputPerMillion: 1.1, outputPerMillion: 4.4, cacheReadPerMillion: 0.55 }],
  ['o1', { inputPerMillion: 15, outputPerMillion: 60, cacheReadPerMillion: 7.5 }],
  ['o3-mini', { inputPerMillion: 1.1, outputPerMillion: 4.4, cacheReadPerMillion: 0.55 }],
  ['o3', { inputPerMillion: 2, outputPerMillion: 8, cacheReadPerMillion: 0.5 }],
  ['o4-mini', { inputPerMillion: 1.1, outputPerMillion: 4.4, cacheReadPerMillion: 0.275 }],
  ['claude-opus-4', messagesFamily(15, 75)],
  ['claude-sonnet-4', messagesFamily(3, 15)],
  ['claude-3-7-sonnet', messagesFamily(3, 15)],
  ['claude-3-5-sonnet', messagesFamily(3, 15)],
  ['claude-haiku-4', messagesFamily(1, 5)],
  ['claude-3-5-haiku', messagesFamily(0.8, 4)],
  // Its published cache prices are rounded off the family's rule.
  ['claude-3-haiku', { inputPerMillion: 0.25, outputPerMillion: 1.25, cacheReadPerMillion: 0.03, cacheWritePerMillion: 0.3, cacheWrite1hPerMillion: 0.5 }],
  ['text-embedding-3-small', { inputPerMillion: 0.02, outputPerMillion: 0 }],
  ['text-embedding-3-large', { inputPerMillion: 0.13, outputPerMillion: 0 }],
  ['text-embedding-ada-002', { inputPerMillion: 0.1, outputPerMillion: 0 }],
];

const BY_LENGTH = [...PRICES].sort((a, b) => b[0].length - a[0].length);

export function priceOf(model: string): ModelPrice | null {
  const id = model.toLowerCase();
  for (const [prefix, price] of BY_LENGTH) {
    if (id === prefix || id.startsWith(`${prefix}-`)) return price;
  }
  return null;
}

export interface Cost {
  usd: number;
  /** False when the model has no list price: the cost is unknown, not zero. */
  priced: boolean;
}

/**
 * The cached prompt tokens a chat-completions `prompt_tokens_details` or a responses `input_tokens_details` reports
 * (`cached_tokens`, part of the prompt's count): 0 when it reports none, or a count that is not a token count.
 */
export function cachedTokensOf(details: unknown): number {
  const cached = (details as { cached_tokens?: unknown } | null | undefined)?.cached_tokens;
  return Number.isSafeInteger(cached) && (cached as number) > 0 ? (cached as number) : 0;
}

/** The usage an attempt is priced by: its prompt's cache reads and writes are parts of `promptTokens`. */
export type PricedUsage = Pick<RunUsage, 'promptTokens' | 'completionTokens' | 'cacheReadTokens' | 'cacheWriteTokens' | 'cacheWrite1hTokens'>;

/**
 * Cost of an attempt. `free` marks providers that do not bill (the mock). The prompt's tokens read from or written to
 * the provider's prompt cache are priced at the model's rates for them (input's when it has none); the cache counts
 * are bounded by what they are parts of, so an upstream's inconsistent counts never price more tokens than it reported.
 */
export function costOf(model: string, usage: PricedUsage, free: boolean): Cost {
  if (free) return { usd: 0, priced: true };
  const price = priceOf(model);
  if (!price) return { usd: 0, priced: false };
  const input = price.inputPerMillion;
  const read = Math.min(usage.cacheReadTokens ?? 0, usage.promptTokens);
  const written = Math.min(usage.cacheWriteTokens ?? 0, usage.promptTokens - read);
  const writtenForAnHour = Math.min(usage.cacheWrite1hTokens ?? 0, written);
  const usd =
    ((usage.promptTokens - read - written) * input +
      read * (price.cacheReadPerMillion ?? input) +
      (written - writtenForAnHour) * (price.cacheWritePerMillion ?? input) +
      writtenForAnHour * (price.cacheWrite1hPerMillion ?? price.cacheWritePerMillion ?? input) +
      usage.completionTokens * price.outputPerMillion) /
    1_000_000;
  return { usd: Math.round(usd * 1e10) / 1e10, priced: true };
}

/** The priced table for docs and the API. */
export function priceTable(): ReadonlyArray<{ model: string } & ModelPrice> {
  return PRICES.map(([model, price]) => ({ model, ...price }));
}
