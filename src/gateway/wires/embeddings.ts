/**
 * `POST /v1/embeddings` (SPEC 4.2): validates and normalises the body (`toCoreRequest`), calls the embeddings
 * service, and answers the `CreateEmbeddingResponse` shape with `cache-control: no-store`. Validation errors are
 * chat-completions-shaped 400s naming the offending `param`. No run is recorded.
 *
 * Normalisation rules: optional fields that are JSON null, empty or whitespace-only count as omitted; a strict digit
 * string `dimensions` is coerced like a number; `input` may be a string, an array of strings, an array of token ids or
 * an array of token arrays (at most 2048 items in each form: inputs, or the ids of one token array), and an empty
 * string, a null chunk or an empty token array becomes a single-space placeholder so every index keeps its place.
 * Fields svc does not know pass through untouched to a compatible provider, as on the chat wire.
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { AppError } from '../../core/errors.ts';
import { modelField } from '../../evidence/model-field.ts';
import {
  EMBEDDING_PLACEHOLDER,
  MAX_EMBEDDING_DIMENSIONS,
  MAX_EMBEDDING_INPUTS,
  MIN_EMBEDDING_DIMENSIONS,
  type CreateEmbeddingsCommand,
  type EmbeddingInput,
  type EmbeddingsService,
} from '../embeddings.ts';
import { authOf } from '../../http/surface.ts';
import { clientGoneSignal } from './gateway-reply.ts';

function invalidParam(param: string, message: string): AppError {
  return new AppError('invalid_request', { message, details: { param } });
}

const isBlank = (value: unknown) => value === null || value === undefined || (typeof value === 'string' && value.trim() === '');
const omittedIfBlank = (value: unknown) => (isBlank(value) ? undefined : value);

const KNOWN_FIELDS = new Set(['model', 'input', 'dimensions', 'encoding_format', 'user']);

/** The body's fields svc does not know, JSON nulls left out as for the known ones; undefined when there are none. */
function unknownFields(body: Record<string, unknown>): Record<string, unknown> | undefined {
  let extra: Record<string, unknown> | undefined;
  for (const [key, value] of Object.entries(body)) if (!KNOWN_FIELDS.has(key) && value !== null) (extra ??= {})[key] = value;
  return extra;
}

const bodySchema = z.object({
  // As on every wire (no run records an embeddings call, but the name goes upstream and into the access log).
  model: modelField,
  // Checked by normaliseEmbeddingInput, with its own messages; optional here, or zod 4 answered a missing input with
  // its own "Invalid input: expected nonoptional, received undefined".
  input: z.unknown().optional(),
  dimensions: z.preprocess(
    (value) => {
      const present = omittedIfBlank(value);
      // Strict digit strings only: "256" yes; " 256", "2.5e2", "0x100" no.
      return typeof present === 'string' && /^[0-9]+$/.test(present) ? Number(present) : present;
    },
    z
      .number({ error: 'dimensions must be an integer' })
      .int('dimensions must be an integer')
      .min(MIN_EMBEDDING_DIMENSIONS, `dimensions must be at least ${MIN_EMBEDDING_DIMENSIONS}`)
      .max(MAX_EMBEDDING_DIMENSIONS, `dimensions must be at most ${MAX_EMBEDDING_DIMENSIONS}`)
      .optional(),
  ),
  encoding_format: z.preprocess(
    omittedIfBlank,
    z.enum(['float', 'base64'], { error: "encoding_format must be 'float' or 'base64'" }).optional(),
  ),
  user: z.preprocess(omittedIfBlank, z.string({ error: 'user must be a string' }).optional()),
});

const MAX_TOKEN_ID = 2 ** 31 - 1;
const isTokenId = (value: unknown): value is number => typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= MAX_TOKEN_ID;

/** The `input` field as a list of inputs, placeholders substituted. */
export function normaliseEmbeddingInput(input: unknown): EmbeddingInput[] {
  if (input === undefined || input === null) throw invalidParam('input', 'input is required');
  if (typeof input === 'string') return [input === '' ? EMBEDDING_PLACEHOLDER : input];
  if (!Array.isArray(input)) throw invalidParam('input', 'input must be a string, an array of strings, an array of token ids or an array of token arrays');
  if (input.length === 0) throw invalidParam('input', 'input must not be an empty array');
  // The OpenAPI document bounds every form of the array at 2048 items, one token array of ids included (the same
  // number as SPEC 8's inputs per request); a token array inside an array of them has no such bound there.
  if (input.length > MAX_EMBEDDING_INPUTS) {
    throw invalidParam('input', `input must have at most ${MAX_EMBEDDING_INPUTS} items, got ${input.length}`);
  }
  // An array of integers is one tokenised input.
  if (input.every((item) => typeof item === 'number')) {
    if (!input.every(isTokenId)) throw invalidParam('input', 'token ids must be non-negative integers');
    return [input as number[]];
  }
  return input.map((item: unknown, index): EmbeddingInput => {
    if (item === null || item === '') return EMBEDDING_PLACEHOLDER;
    if (typeof item === 'string') return item;
    if (Array.isArray(item)) {
      if (item.length === 0) return EMBEDDING_PLACEHOLDER;
      if (!item.every(isTokenId)) throw invalidParam('input', `input[${index}] must contain only non-negative integer token ids`);
      return item as number[];
    }
    throw invalidParam('input', `input[${index}] must be a string, a token array or null`);
  });
}

/** Validate a request body and turn it into the service command. */
export function toCoreRequest(body: unknown): CreateEmbeddingsCommand {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new AppError('invalid_request', { message: 'The request body must be a JSON object.' });
  }
  const parsed = bodySchema.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const param = String(issue.path[0] ?? 'body');
    const message = param === 'model' && issue.code === 'invalid_type' ? 'model is required' : issue.message;
    throw invalidParam(param, message);
  }
  const { model, input, dimensions, encoding_format, user } = parsed.data;
  const extra = unknownFields(body as Record<string, unknown>);
  return {
    model,
    inputs: normaliseEmbeddingInput(input),
    encodingFormat: encoding_format ?? 'float',
    ...(dimensions !== undefined ? { dimensions } : {}),
    ...(user !== undefined ? { user } : {}),
    ...(extra !== undefined ? { extra } : {}),
  };
}

export function embeddingsRoutes(service: EmbeddingsService) {
  return async function embeddingsPlugin(app: FastifyInstance): Promise<void> {
    app.post('/embeddings', async (request, reply) => {
      const command = toCoreRequest(request.body);
      const auth = authOf(request);
      const result = await service.create(command, { tenantId: auth.tenantId, signal: clientGoneSignal(request, reply) });
      reply.header('cache-control', 'no-store');
      return result;
    });
  };
}
