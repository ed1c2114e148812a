/**
 * Token counting for usage figures of the mock provider, request accounting and embeddings usage.
 *
 * One BPE rank file (`o200k_base`, the encoding of the current chat-completions model generations, from js-tiktoken),
 * so svc carries one table instead of six, encoded by ./tokens-bpe.ts: js-tiktoken's own encoder is quadratic in the
 * length of a run the pre-tokeniser leaves whole, and a prompt of 32,000 spaces held the event loop for a minute.
 * Counts are exact for o200k models and an estimate for everything else (cl100k embedding models, the messages
 * family); docs/providers.md says how far off. The encoder is built lazily on first use (about 0.3 s of CPU and some
 * 20 MB of heap, once): not at start, so `svc serve` answers at once, and live requests whose provider reports usage
 * never need it (prompt estimates are computed on demand).
 *
 * The ranks are read on that first use too, as data: from `o200k_base.json` beside the bundle (bin/build.mjs writes
 * it), or from js-tiktoken's own module when running from source. Imported statically, the table was a 2.3 MB
 * JavaScript module that every start of svc parsed and then kept in memory, needed or not.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { TiktokenBPE } from 'js-tiktoken/lite';
import { createBpeEncoder, type BpeEncoder } from './tokens-bpe.ts';
import { withoutTrailing } from '../core/text.ts';

/** The encoding every count uses, whatever the model. */
export const TOKENIZER_ENCODING = 'o200k_base';

let encoder: BpeEncoder | null = null;

/** The rank file's name: bin/build.mjs writes it beside the bundle under this name. */
export const RANKS_FILE = `${TOKENIZER_ENCODING}.json`;

function loadRanks(): TiktokenBPE {
  const beside = new URL(`./${RANKS_FILE}`, import.meta.url);
  if (existsSync(beside)) return JSON.parse(readFileSync(beside, 'utf8')) as TiktokenBPE;
  // From source (tsx, the tests): the package's module, through a require the bundler does not follow.
  return createRequire(import.meta.url)(`js-tiktoken/ranks/${TOKENIZER_ENCODING}`) as TiktokenBPE;
}

function tokenizer(): BpeEncoder {
  encoder ??= createBpeEncoder(loadRanks());
  return encoder;
}

/** Build the encoder now (e.g. right after the server listens) so no request pays for it. */
export function warmTokenizer(): void {
  tokenizer();
}

/** Token ids of `text`. Special-token spellings such as `<|endoftext|>` are encoded as ordinary text. */
export function encodeTokens(text: string): number[] {
  return tokenizer().encode(text);
}

export function decodeTokens(ids: number[]): string {
  return tokenizer().decode(ids);
}

/**
 * Texts longer than this are counted exactly on their first part and the rest at the same rate. Counting a MiB costs
 * ~0.06 s of the event loop for prose and up to ~1 s for the slowest shape (ideographs with no punctuation: one piece of
 * 3 MB to merge), and a body may hold 32 MiB: a 30 MB prompt to `/v1/messages/count_tokens` or to the mock provider
 * would hold every other request for many seconds. A MiB is ~260,000 tokens of English, more than most models' context
 * windows.
 */
export const EXACT_COUNT_MAX_CHARS = 1 << 20;

/**
 * Number of tokens of `text`. `model` is accepted so callers state what they count for; every family is counted with
 * o200k_base today (docs/providers.md, "Token counting"). Beyond `EXACT_COUNT_MAX_CHARS`, an extrapolation.
 */
export function countTokens(text: string, _model?: string): number {
  if (text.length === 0) return 0;
  if (text.length <= EXACT_COUNT_MAX_CHARS) return encodeTokens(text).length;
  const counted = encodeTokens(text.slice(0, EXACT_COUNT_MAX_CHARS)).length;
  return counted + Math.ceil(((text.length - EXACT_COUNT_MAX_CHARS) * counted) / EXACT_COUNT_MAX_CHARS);
}

/** The longest prefix of `text` that has at most `maxTokens` tokens. */
export function truncateToTokens(text: string, maxTokens: number): string {
  if (maxTokens <= 0) return '';
  const ids = encodeTokens(text);
  if (ids.length <= maxTokens) return text;
  // Drop a trailing partial UTF-8 sequence (U+FFFD) that decoding a cut token list can leave behind.
  return withoutTrailing(decodeTokens(ids.slice(0, maxTokens)), '\uFFFD');
}

// Overheads of the chat format (the published counting recipe for the chat-completions family): every message is
// wrapped in `<|start|>{role}<|message|>...<|end|>`, a `name` costs one more token, and the reply is primed with 3.
const TOKENS_PER_MESSAGE = 3;
const TOKENS_PER_NAME = 1;
const REPLY_PRIMING = 3;
// Tool declarations are rendered into the prompt as a typed namespace; these constants follow the same recipe.
const TOOLS_INIT = 7;
const TOOL_PROPS_INIT = 3;
const TOOL_PROP_KEY = 3;
const TOOL_ENUM_INIT = -3;
const TOOL_ENUM_ITEM = 3;
const TOOLS_END = 12;
// Image parts: a low-detail image is a fixed 85 tokens; anything else is estimated as one 512px tile plus the base.
const IMAGE_LOW_TOKENS = 85;
const IMAGE_DEFAULT_TOKENS = 255;

/** The parts of a chat request that are counted; any chat-completions request body fits. */
export interface CountableChatRequest {
  model?: string;
  messages: ReadonlyArray<{ role?: unknown; content?: unknown; name?: unknown; tool_calls?: unknown; [field: string]: unknown }>;
  tools?: unknown;
}

function contentTokens(content: unknown): number {
  if (typeof content === 'string') return countTokens(content);
  if (!Array.isArray(content)) return 0;
  let total = 0;
  for (const part of content as Array<Record<string, unknown>>) {
    if (!part || typeof part !== 'object') continue;
    if (typeof part.text === 'string') total += countTokens(part.text);
    else if (typeof part.refusal === 'string') total += countTokens(part.refusal);
    else if (part.type === 'image_url') {
      const detail = (part.image_url as { detail?: unknown } | undefined)?.detail;
      total += detail === 'low' ? IMAGE_LOW_TOKENS : IMAGE_DEFAULT_TOKENS;
    }
    // Audio and file parts are not counted: their size is known only to the upstream.
  }
  return total;
}

function toolCallTokens(toolCalls: unknown): number {
  if (!Array.isArray(toolCalls)) return 0;
  let total = 0;
  for (const call of toolCalls as Array<{ function?: { name?: unknown; arguments?: unknown } }>) {
    const fn = call?.function;
    if (!fn) continue;
    total += TOKENS_PER_MESSAGE;
    if (typeof fn.name === 'string') total += countTokens(fn.name);
    if (typeof fn.arguments === 'string') total += countTokens(fn.arguments);
  }
  return total;
}

function toolsTokens(tools: unknown): number {
  if (!Array.isArray(tools) || tools.length === 0) return 0;
  let total = TOOLS_INIT;
  for (const tool of tools as Array<{ function?: Record<string, unknown> }>) {
    const fn = tool?.function;
    if (!fn) continue;
    total += countTokens(`${String(fn.name ?? '')}:${String(fn.description ?? '').replace(/\.$/u, '')}`);
    const properties = (fn.parameters as { properties?: Record<string, Record<string, unknown>> } | undefined)?.properties;
    if (properties && typeof properties === 'object' && Object.keys(properties).length > 0) {
      total += TOOL_PROPS_INIT;
      for (const [key, schema] of Object.entries(properties)) {
        total += TOOL_PROP_KEY;
        const type = typeof schema?.type === 'string' ? schema.type : 'object';
        const description = typeof schema?.description === 'string' ? schema.description.replace(/\.$/u, '') : '';
        if (Array.isArray(schema?.enum)) {
          total += TOOL_ENUM_INIT;
          for (const item of schema.enum) total += TOOL_ENUM_ITEM + countTokens(String(item));
        }
        total += countTokens(`${key}:${type}:${description}`);
      }
    }
  }
  return total + TOOLS_END;
}

/** Prompt tokens of a chat request: messages with their per-message overhead, tool calls and tool declarations. */
/** The tokens of one embeddings input: a text's count, a token array's length. */
export function countEmbeddingInputTokens(input: string | readonly number[]): number {
  return typeof input === 'string' ? countTokens(input) : input.length;
}

/** The tokens of an embeddings request's inputs. */
export function countEmbeddingTokens(inputs: ReadonlyArray<string | readonly number[]>): number {
  let tokens = 0;
  for (const input of inputs) tokens += countEmbeddingInputTokens(input);
  return tokens;
}

export function countChatTokens(request: CountableChatRequest): number {
  let total = REPLY_PRIMING;
  for (const message of request.messages) {
    total += TOKENS_PER_MESSAGE;
    if (typeof message.role === 'string') total += countTokens(message.role);
    total += contentTokens(message.content);
    if (typeof message.name === 'string') total += TOKENS_PER_NAME + countTokens(message.name);
    total += toolCallTokens(message.tool_calls);
  }
  return total + toolsTokens(request.tools);
}
