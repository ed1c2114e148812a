/**
 * `POST /v1/messages` and `POST /v1/messages/count_tokens` (SPEC 4.2). Errors on this wire are messages-shaped
 * (src/http/error-shapes.ts). The stream uses the wire's named SSE events (`event: message_start` ...); a failure
 * after it started is one `event: error`. Every answer carries the request's id in `request-id` too, where the wire's
 * SDKs read it (its errors get it from the error handler).
 */
import type { FastifyInstance } from 'fastify';
import { messagesAdapter } from '../messages.ts';
import type { Gateway } from '../pipeline.ts';
import type { MessagesStreamEvent } from '../providers/types.ts';
import { countMessagesTokens } from '../tokens-messages.ts';
import { MESSAGES_REQUEST_ID } from '../../http/error-shapes.ts';
import { answerThroughGateway, namedFrame } from './gateway-reply.ts';
import { messagesHeaders, parseCountTokensRequest, parseMessagesRequest } from './messages-schema.ts';

export function messagesRoutes(deps: { gateway: Gateway; appBaseUrl: string | null }) {
  return async function (app: FastifyInstance) {
    app.post('/messages', async (request, reply) => {
      reply.header(MESSAGES_REQUEST_ID, request.id);
      const headers = messagesHeaders(request.headers);
      const validated = parseMessagesRequest(request.body, headers.betas);
      return answerThroughGateway(request, reply, deps.gateway, messagesAdapter(validated, headers), {
        appBaseUrl: deps.appBaseUrl,
        format: { frame: (event: MessagesStreamEvent) => namedFrame(event.type, event), closing: (event) => event.type === 'message_stop' },
      });
    });

    // Local count: no run, no trace, no usage, no live call.
    app.post('/messages/count_tokens', async (request, reply) => {
      reply.header(MESSAGES_REQUEST_ID, request.id);
      messagesHeaders(request.headers);
      return { input_tokens: countMessagesTokens(parseCountTokensRequest(request.body)) };
    });
  };
}
