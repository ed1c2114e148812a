/**
 * `POST /v1/chat/completions` (SPEC 4.2): validate, run the pipeline with the chat adapter, answer with the
 * chat-completions JSON or its native SSE stream (`data: {chunk}` lines, `data: [DONE]` only after a complete
 * answer; a failure inside an accepted stream is one `data: {error}` line, never a fake `[DONE]`).
 */
import type { FastifyInstance } from 'fastify';
import type { Clock } from '../../core/clock.ts';
import { chatAdapter, type ChatStreamEvent } from '../chat.ts';
import type { Gateway } from '../pipeline.ts';
import type { ChatChunk } from '../providers/types.ts';
import { parseChatRequest } from './chat-completions-schema.ts';
import { answerThroughGateway, dataFrame } from './gateway-reply.ts';

/**
 * svc asks upstream for usage to record the run; the client sees the usage chunk only when it asked for it, and then as
 * the OpenAPI document has it: on the last chunk, of its own (`choices: []`), every other chunk's `usage` null. A usage
 * an upstream sent on a chunk with choices is null there; the relay ends the stream with a usage chunk (chat.ts).
 */
function chunkForClient(event: ChatStreamEvent, includeUsage: boolean): ChatStreamEvent | null {
  if (!('object' in event)) return event;
  const chunk: ChatChunk = event;
  // Object.assign, not `{ ...chunk, usage: null }`: a spread followed by a new key is a slow, promoting path on Node 20
  // (docs/performance-notes.md, "Object spreads that add keys").
  if (includeUsage) {
    const alone = chunk.usage === null || (chunk.usage !== undefined && chunk.choices.length === 0);
    return alone ? chunk : Object.assign({}, chunk, { usage: null });
  }
  if (chunk.usage === undefined) return chunk;
  if (chunk.choices.length === 0) return null;
  const { usage: _omitted, ...rest } = chunk;
  return rest as ChatChunk;
}

export function chatCompletionsRoutes(deps: { gateway: Gateway; clock: Clock; appBaseUrl: string | null }) {
  return async function (app: FastifyInstance) {
    app.post('/chat/completions', async (request, reply) => {
      const chat = parseChatRequest(request.body);
      return answerThroughGateway(request, reply, deps.gateway, chatAdapter(chat, deps.clock.now), {
        appBaseUrl: deps.appBaseUrl,
        format: {
          frame: (event) => {
            const shown = chunkForClient(event, chat.includeUsage);
            return shown ? dataFrame(shown) : null;
          },
          trailer: 'data: [DONE]\n\n',
        },
      });
    });
  };
}
