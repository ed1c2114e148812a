/**
 * The embeddings service behind `POST /v1/embeddings` (SPEC 4.2): routes to the provider registry's candidates and
 * fails open along them, sends a batch the backend refuses as too large again in smaller chunks (halving the size at
 * each refusal) and merges them index-aligned, embeds text and token-array inputs of one request as separate upstream
 * batches (a compatible upstream takes one kind per call), and encodes the vectors as floats or base64. It records no
 * run and populates no cache.
 */
import type { AnswerBudget } from './answer-budget.ts';
import type { CallSignal } from './call-signal.ts';
import { AppError } from '../core/errors.ts';
import { providerErrorToAppError } from './providers/errors.ts';
import { mockEmbeddingsRefusal } from './providers/mock.ts';
import { ProviderError, type EmbeddingsResult, type Provider, type ProviderRegistry } from './providers/types.ts';

/** SPEC 8: at most this many inputs per request. */
export const MAX_EMBEDDING_INPUTS = 2048;
/**
 * Bounds of `dimensions`. The upstream is the authority on its model's size (it refuses one its model does not have,
 * and that 400 is relayed), so the upper bound only keeps absurd numbers off the wire: far past every embedding
 * model's size (4,096 for the largest LLM-based ones, Qwen3-Embedding-8B or NV-Embed-v2; the hidden sizes they come
 * from reach 16,384). The OpenAPI document sets only the minimum. An answer's bytes are bounded on their own
 * (providers/bodies.ts), and the mock, which computes its vectors in svc, has its own bound (MOCK_MAX_EMBEDDING_DIMENSIONS).
 */
export const MIN_EMBEDDING_DIMENSIONS = 1;
export const MAX_EMBEDDING_DIMENSIONS = 65_536;
/** What an empty string, a null chunk or an empty token array becomes, keeping indexes aligned. */
export const EMBEDDING_PLACEHOLDER = ' ';

/** One normalised input: text, or token ids. */
export type EmbeddingInput = string | number[];

export interface CreateEmbeddingsCommand {
  model: string;
  inputs: EmbeddingInput[];
  dimensions?: number;
  encodingFormat: 'float' | 'base64';
  user?: string;
  /** Fields svc does not know, passed on untouched to a compatible provider (as on the chat wire). */
  extra?: Record<string, unknown>;
}

/** The `CreateEmbeddingResponse` object of the chat-completions wire. */
export interface EmbeddingsResponse {
  object: 'list';
  data: Array<{ object: 'embedding'; index: number; embedding: number[] | string }>;
  model: string;
  usage: { prompt_tokens: number; total_tokens: number };
}

export interface EmbeddingsCallContext {
  tenantId: string;
  signal: CallSignal;
}

export interface EmbeddingsService {
  create(command: CreateEmbeddingsCommand, context: EmbeddingsCallContext): Promise<EmbeddingsResponse>;
}

/** Little-endian float32 bytes in base64, the encoding the official clients decode. */
export function encodeEmbeddingBase64(vector: ArrayLike<number>): string {
  const bytes = Buffer.alloc(vector.length * 4);
  for (let i = 0; i < vector.length; i += 1) bytes.writeFloatLE(vector[i]!, i * 4);
  return bytes.toString('base64');
}

interface Embedded {
  model: string;
  vectors: number[][];
  tokens: number;
}

/**
 * Parts of one request embedded apart (chunks of a batch too large, text and token inputs) must have vectors of one
 * length, as one answer's have (the provider checks those): an upstream that switched model between parts (a
 * misconfigured fallback behind it) would otherwise yield a mixed answer. Each part's first vector stands for it.
 */
function assertSameDimensions(part: number[][], before: number[][], provider: string): void {
  const length = part[0]?.length;
  const expected = before[0]?.length;
  if (length !== undefined && expected !== undefined && length !== expected) {
    throw new ProviderError('bad_response', `the upstream answered parts of one request with vectors of ${expected} and ${length} dimensions`, { provider });
  }
}

export function createEmbeddingsService(deps: { providers: ProviderRegistry; answers?: AnswerBudget }): EmbeddingsService {
  /**
   * Embed one same-kind batch with one provider in consecutive chunks: the whole batch first, and whenever the backend
   * says a chunk is too large, chunks of half its size from there on. The size a backend refused is never sent again,
   * so a backend taking L inputs a call costs log2(n / L) refused calls; halving each part on its own asked every part
   * larger than L again (at L = 1, n - 1 refused calls of 2n - 1).
   */
  async function embedChunked(provider: Provider, command: CreateEmbeddingsCommand, inputs: EmbeddingInput[], signal: CallSignal): Promise<Embedded> {
    const vectors: number[][] = [];
    let tokens = 0;
    let model: string | undefined;
    let size = inputs.length;
    let start = 0;
    while (start < inputs.length) {
      const chunk = size >= inputs.length ? inputs : inputs.slice(start, start + size);
      let result: EmbeddingsResult;
      try {
        result = await provider.embed(
          {
            model: command.model,
            input: chunk as string[] | number[][],
            ...(command.dimensions !== undefined ? { dimensions: command.dimensions } : {}),
            ...(command.user !== undefined ? { user: command.user } : {}),
            ...(command.extra !== undefined ? { extra: command.extra } : {}),
          },
          { signal },
        );
      } catch (error) {
        if (!(error instanceof ProviderError) || error.kind !== 'batch_too_large') throw error;
        if (chunk.length <= 1) {
          // One input that is still "too large" is too long, not too many: the client's to fix.
          throw new ProviderError('rejected', error.message, { provider: error.provider, upstreamStatus: 400, cause: error });
        }
        // Sequential chunks: parallel ones would add pressure on a backend that is already refusing.
        size = Math.ceil(chunk.length / 2);
        continue;
      }
      if (result.vectors.length !== chunk.length) {
        throw new ProviderError('bad_response', `expected ${chunk.length} embeddings, got ${result.vectors.length}`, { provider: provider.name });
      }
      assertSameDimensions(result.vectors, vectors, provider.name);
      for (const vector of result.vectors) vectors.push(vector);
      tokens += result.usage.prompt_tokens;
      model ??= result.model;
      start += chunk.length;
    }
    return { model: model ?? command.model, vectors, tokens };
  }

  /** Every input with one provider: text and token inputs as separate batches, merged back by original index. */
  async function embedAll(provider: Provider, command: CreateEmbeddingsCommand, signal: CallSignal): Promise<Embedded> {
    // The mock builds its vectors in svc: its bound is on the whole request, which a split would hand it in parts.
    if (provider.kind === 'mock') {
      const refusal = mockEmbeddingsRefusal(command.model, command.inputs.length, command.dimensions);
      if (refusal) throw refusal;
    }
    const textIndexes: number[] = [];
    const tokenIndexes: number[] = [];
    command.inputs.forEach((input, index) => (typeof input === 'string' ? textIndexes : tokenIndexes).push(index));
    const vectors = new Array<number[]>(command.inputs.length);
    let tokens = 0;
    let model = command.model;
    let before: number[][] = [];
    for (const indexes of [textIndexes, tokenIndexes]) {
      if (indexes.length === 0) continue;
      const part = await embedChunked(provider, command, indexes.map((i) => command.inputs[i]!), signal);
      assertSameDimensions(part.vectors, before, provider.name);
      before = part.vectors;
      indexes.forEach((original, position) => {
        vectors[original] = part.vectors[position]!;
      });
      tokens += part.tokens;
      model = part.model;
    }
    return { model, vectors, tokens };
  }

  async function answered(command: CreateEmbeddingsCommand, context: EmbeddingsCallContext): Promise<EmbeddingsResponse> {
    let embedded: Embedded | undefined;
    try {
      const { candidates } = await deps.providers.route('embeddings', command.model, context.tenantId);
      for (let i = 0; i < candidates.length; i += 1) {
        try {
          embedded = await embedAll(candidates[i]!, command, context.signal);
          break;
        } catch (error) {
          // What the failed attempt read of its answers is gone with it (answer-budget.ts).
          deps.answers?.release(context.signal);
          // Fail open to the next configured provider on a retryable failure; a rejection is the client's to see.
          const last = i === candidates.length - 1;
          if (last || !(error instanceof ProviderError) || !error.retryable || context.signal.aborted) throw error;
        }
      }
    } catch (error) {
      if (error instanceof ProviderError) throw providerErrorToAppError(error);
      throw error;
    }
    if (!embedded) throw new AppError('upstream_error');
    const { vectors, model, tokens } = embedded;
    return {
      object: 'list',
      data: vectors.map((vector, index) => ({
        object: 'embedding',
        index,
        embedding: command.encodingFormat === 'base64' ? encodeEmbeddingBase64(vector) : vector,
      })),
      model,
      usage: { prompt_tokens: tokens, total_tokens: tokens },
    };
  }

  return {
    async create(command, context) {
      try {
        return await answered(command, context);
      } finally {
        // The call's answers are vectors now, or its failure (answer-budget.ts).
        deps.answers?.release(context.signal);
      }
    },
  };
}
