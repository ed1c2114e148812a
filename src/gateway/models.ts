/**
 * The model catalogue of `GET /v1/models` (SPEC 4.2): a fixed, deterministic list of stable selectors — direct
 * chat-completions-family and messages-family models, the governed route `svc/chorus`, and the embedding selectors.
 * Local data only: listing models calls no upstream and records no run. A model missing here can still be requested
 * on the other wires; the catalogue advertises, it does not gate.
 */

/** A `model` object of the chat-completions wire. */
export interface CatalogueModel {
  id: string;
  object: 'model';
  /** Fixed epoch seconds, so the list is byte-for-byte stable across restarts and instances. */
  created: number;
  owned_by: string;
}

/**
 * The model id of SPEC 4.3's governed route. svc does not build the route yet: no live provider serves it (the
 * registry refuses it there), and the mock answers it as any other model (docs/gateway.md, "The governed route").
 */
export const GOVERNED_ROUTE_MODEL = 'svc/chorus';

// Owners are provider kinds (SPEC naming rule), not vendor names.
const CHATCOMP = 'chat-completions-provider';
const MESSAGES = 'messages-provider';

const entries: ReadonlyArray<[id: string, created: number, ownedBy: string]> = [
  [GOVERNED_ROUTE_MODEL, 1735689600, 'svc'],
  ['gpt-4o', 1715367049, CHATCOMP],
  ['gpt-4o-mini', 1721172741, CHATCOMP],
  ['gpt-4.1', 1744316542, CHATCOMP],
  ['gpt-4.1-mini', 1744318173, CHATCOMP],
  ['gpt-4.1-nano', 1744321707, CHATCOMP],
  ['o3', 1744225308, CHATCOMP],
  ['o3-mini', 1737146383, CHATCOMP],
  ['o4-mini', 1744225351, CHATCOMP],
  ['claude-opus-4-1', 1754352000, MESSAGES],
  ['claude-sonnet-4-5', 1759104000, MESSAGES],
  ['claude-haiku-4-5', 1760486400, MESSAGES],
  ['claude-3-5-haiku-latest', 1729555200, MESSAGES],
  ['text-embedding-3-small', 1705948997, CHATCOMP],
  ['text-embedding-3-large', 1705953180, CHATCOMP],
  ['text-embedding-ada-002', 1671217299, CHATCOMP],
];

export const MODEL_CATALOGUE: ReadonlyArray<Readonly<CatalogueModel>> = Object.freeze(
  entries.map(([id, created, owned_by]) => Object.freeze({ id, object: 'model' as const, created, owned_by })),
);

const byId = new Map(MODEL_CATALOGUE.map((model) => [model.id, model]));

/** The `list` object of `GET /v1/models`. */
export function listModels(): { object: 'list'; data: CatalogueModel[] } {
  return { object: 'list', data: MODEL_CATALOGUE.map((model) => ({ ...model })) };
}

/** One catalogue entry by exact id, or undefined. */
export function findModel(id: string): CatalogueModel | undefined {
  const model = byId.get(id);
  return model ? { ...model } : undefined;
}
