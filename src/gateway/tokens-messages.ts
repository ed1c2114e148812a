/**
 * Input-token counts for the messages wire (`/v1/messages/count_tokens`, and the local estimate when an upstream
 * reports none). Counted with the same maintained tokenizer as the chat wire (o200k_base, src/gateway/tokens.ts)
 * plus a small fixed overhead per message and per tool, as the provider frames them; docs/providers.md says how
 * close that is to each model family's own count.
 */
import { isDeferredTool } from './deferred-tools.ts';
import { base64ImageSize } from './image-size.ts';
import type { MessagesRequest } from './providers/types.ts';
import { countTokens } from './tokens.ts';

const PER_MESSAGE = 3;
const PER_TOOL = 8;
/** An image of no size svc can read (by address, or bytes of no known format), and a PDF page: the most an image counts. */
const PER_IMAGE = 1600;
const BASE = 3;

/** The provider's image bounds: scaled down, keeping its aspect, to 1568 px on the long edge and ~1,600 tokens. */
const MAX_IMAGE_EDGE = 1568;
const PIXELS_PER_TOKEN = 750;
const MAX_IMAGE_PIXELS = PER_IMAGE * PIXELS_PER_TOKEN;

/**
 * An image's tokens as the provider documents them, width x height / 750 after its scaling down; the size read from a
 * base64 image's header (src/gateway/image-size.ts, a few bytes decoded), else the flat figure.
 */
function imageTokens(block: Block): number {
  const source = block.source as { type?: unknown; data?: unknown } | null | undefined;
  const size = source?.type === 'base64' && typeof source.data === 'string' ? base64ImageSize(source.data) : null;
  if (size === null) return PER_IMAGE;
  const scale = Math.min(1, MAX_IMAGE_EDGE / Math.max(size.width, size.height));
  const pixels = Math.min(size.width * scale * (size.height * scale), MAX_IMAGE_PIXELS);
  return Math.ceil(pixels / PIXELS_PER_TOKEN);
}

type Block = { type: string; [field: string]: unknown };

/**
 * The text of content nested in a block (a `tool_result`'s, a content document's): a string, or blocks counted as a
 * message's are, `extra` added. Entries that are not blocks count nothing: a document's source is not validated.
 */
function nestedText(content: unknown, extra: number): { text: string; extra: number } {
  if (typeof content === 'string') return { text: content, extra };
  if (!Array.isArray(content)) return { text: '', extra };
  const parts = content.filter((part): part is Block => typeof part === 'object' && part !== null).map(blockText);
  return { text: parts.map((part) => part.text).join('\n'), extra: extra + parts.reduce((sum, part) => sum + part.extra, 0) };
}

/**
 * A document's text: a plain-text source's `data` and a content source's blocks are read as text is (a long text
 * document is many tokens, not one page's); a PDF, by data or by address, counts a flat page.
 */
function documentText(block: Block): { text: string; extra: number } {
  const source = block.source as { type?: unknown; data?: unknown; content?: unknown } | null | undefined;
  if (source?.type === 'text' && typeof source.data === 'string') return { text: source.data, extra: 4 };
  if (source?.type === 'content') return nestedText(source.content, 4);
  return { text: '', extra: PER_IMAGE };
}

function blockText(block: Block): { text: string; extra: number } {
  switch (block.type) {
    case 'text':
      return { text: String(block.text ?? ''), extra: 0 };
    case 'thinking':
      return { text: String(block.thinking ?? ''), extra: 0 };
    case 'tool_use':
      return { text: `${String(block.name ?? '')} ${JSON.stringify(block.input ?? {})}`, extra: 4 };
    case 'tool_result':
      return nestedText(block.content, 4);
    case 'document':
      return documentText(block);
    case 'image':
      return { text: '', extra: imageTokens(block) };
    default:
      return { text: JSON.stringify(block), extra: 0 };
  }
}

function contentTokens(content: MessagesRequest['system'] | MessagesRequest['messages'][number]['content'], model: string): number {
  if (content === undefined) return 0;
  if (typeof content === 'string') return countTokens(content, model);
  let total = 0;
  for (const block of content) {
    const { text, extra } = blockText(block);
    total += countTokens(text, model) + extra;
  }
  return total;
}

export function countMessagesTokens(request: Pick<MessagesRequest, 'model' | 'messages' | 'system' | 'tools' | 'tool_choice'>): number {
  let total = BASE + contentTokens(request.system, request.model);
  for (const message of request.messages) total += PER_MESSAGE + contentTokens(message.content, request.model);
  for (const tool of request.tools ?? []) {
    // A deferred tool is not in the model's context (nor counted by the provider) until a tool search loads it.
    if (isDeferredTool(tool)) continue;
    total += PER_TOOL + countTokens(`${tool.name} ${tool.description ?? ''} ${JSON.stringify(tool.input_schema ?? {})}`, request.model);
  }
  if (request.tool_choice) total += countTokens(JSON.stringify(request.tool_choice), request.model);
  return total;
}
