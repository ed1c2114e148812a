/**
 * `POST /v1/chat/completions` (SPEC 4.2): validate, hand the pipeline a plain call, and answer with the
 * chat-completions JSON or its native SSE stream (`data: {chunk}` lines, `data: [DONE]` only after a complete
 * answer; a failure inside an accepted stream is one `data: {error}` line, never a fake `[DONE]`).
 */
import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { authOf } from '../../http/surface.ts';
import { parseCacheControls } from '../cache-controls.ts';
import type { ChatGateway, StreamItem } from '../chat.ts';
import { parseChatRequest } from './chat-completions-schema.ts';
import { runUrl } from './run-headers.ts';

function headerValue(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

/** An AbortSignal that fires when the client goes away before the answer was fully sent. */
function clientGone(request: FastifyRequest, reply: FastifyReply): AbortController {
  const controller = new AbortController();
  const onClose = () => {
    if (!reply.raw.writableFinished) controller.abort(new Error('client disconnected'));
  };
  reply.raw.once('close', onClose);
  request.raw.once('aborted', onClose);
  return controller;
}

async function* sse(items: AsyncGenerator<StreamItem>, includeUsage: boolean): AsyncGenerator<string> {
  try {
    for await (const item of items) {
      if ('error' in item) {
        yield `data: ${JSON.stringify(item.error.body)}\n\n`;
        return;
      }
      let chunk = item.chunk;
      if (chunk.usage && !includeUsage) {
        // svc asks upstream for usage to record the run; the client only sees it when it asked.
        if (chunk.choices.length === 0) continue;
        const { usage: _omitted, ...rest } = chunk;
        chunk = rest as typeof chunk;
      } else if (includeUsage && chunk.usage === undefined) {
        chunk = { ...chunk, usage: null };
      }
      yield `data: ${JSON.stringify(chunk)}\n\n`;
    }
    yield 'data: [DONE]\n\n';
  } finally {
    // Closing early (client gone) runs the pipeline's finally, which finalises the run.
    await items.return(undefined);
  }
}

export function chatCompletionsRoutes(deps: { gateway: ChatGateway; appBaseUrl: string | null }) {
  return async function (app: FastifyInstance) {
    app.post('/chat/completions', async (request, reply) => {
      const chat = parseChatRequest(request.body);
      const controls = parseCacheControls({
        bypass: headerValue(request, 'x-svc-cache-bypass'),
        cacheControl: headerValue(request, 'cache-control'),
      });
      const abort = clientGone(request, reply);
      const result = await deps.gateway.complete({
        auth: authOf(request),
        chat,
        controls,
        requestId: request.id,
        signal: abort.signal,
      });
      reply.header('x-svc-run-id', result.runId);
      reply.header('x-svc-route', result.route);
      reply.header('x-svc-run-url', runUrl(deps.appBaseUrl, request, result.runId));
      if (result.kind === 'json') return reply.send(result.completion);
      reply
        .header('content-type', 'text/event-stream; charset=utf-8')
        .header('cache-control', 'no-cache')
        .header('x-accel-buffering', 'no');
      return reply.send(Readable.from(sse(result.items, chat.includeUsage), { objectMode: false }));
    });
  };
}
