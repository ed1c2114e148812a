/**
 * List prices per million tokens (USD), by model id or id prefix, for the cost of live attempts. A model that is
 * not in the table is flagged (`priced: false`) and costs 0 in rollups: a guessed price would be evidence we
 * cannot stand behind. The mock provider is free. The table is documented in docs/gateway.md ("Cost").
 */

export interface ModelPrice {
  inputPerMillion: number;
  outputPerMillion: number;
}

/** Longest matching prefix wins, so dated snapshots (`gpt-4o-2024-08-06`) price as their family. */
const PRICES: ReadonlyArray<[prefix: string, price: ModelPrice]> = [
  ['gpt-5-nano', { inputPerMillion: 0.05, outputPerMillion: 0.4 }],
  ['gpt-5-mini', { inputPerMillion: 0.25, outputPerMillion: 2 }],
  ['gpt-5', { inputPerMillion: 1.25, outputPerMillion: 10 }],
  ['gpt-4.1-nano', { inputPerMillion: 0.1, outputPerMillion: 0.4 }],
  ['gpt-4.1-mini', { inputPerMillion: 0.4, outputPerMillion: 1.6 }],
  ['gpt-4.1', { inputPerMillion: 2, outputPerMillion: 8 }],
  ['gpt-4o-mini', { inputPerMillion: 0.15, outputPerMillion: 0.6 }],
  ['gpt-4o', { inputPerMillion: 2.5, outputPerMillion: 10 }],
  ['gpt-4-turbo', { inputPerMillion: 10, outputPerMillion: 30 }],
  ['gpt-3.5-turbo', { inputPerMillion: 0.5, outputPerMillion: 1.5 }],
  ['o1-mini', { inputPerMillion: 1.1, outputPerMillion: 4.4 }],
  ['o1', { inputPerMillion: 15, outputPerMillion: 60 }],
  ['o3-mini', { inputPerMillion: 1.1, outputPerMillion: 4.4 }],
  ['o3', { inputPerMillion: 2, outputPerMillion: 8 }],
  ['o4-mini', { inputPerMillion: 1.1, outputPerMillion: 4.4 }],
  ['claude-opus-4', { inputPerMillion: 15, outputPerMillion: 75 }],
  ['claude-sonnet-4', { inputPerMillion: 3, outputPerMillion: 15 }],
  ['claude-3-7-sonnet', { inputPerMillion: 3, outputPerMillion: 15 }],
  ['claude-3-5-sonnet', { inputPerMillion: 3, outputPerMillion: 15 }],
  ['claude-haiku-4', { inputPerMillion: 1, outputPerMillion: 5 }],
  ['claude-3-5-haiku', { inputPerMillion: 0.8, outputPerMillion: 4 }],
  ['claude-3-haiku', { inputPerMillion: 0.25, outputPerMillion: 1.25 }],
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

/** Cost of an attempt. `free` marks providers that do not bill (the mock). */
export function costOf(model: string, usage: { promptTokens: number; completionTokens: number }, free: boolean): Cost {
  if (free) return { usd: 0, priced: true };
  const price = priceOf(model);
  if (!price) return { usd: 0, priced: false };
  const usd = (usage.promptTokens * price.inputPerMillion + usage.completionTokens * price.outputPerMillion) / 1_000_000;
  return { usd: Math.round(usd * 1e10) / 1e10, priced: true };
}

/** The priced table for docs and the API. */
export function priceTable(): ReadonlyArray<{ model: string } & ModelPrice> {
  return PRICES.map(([model, price]) => ({ model, ...price }));
}
