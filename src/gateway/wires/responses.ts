/**
 * `POST /v1/responses` (SPEC 4.2): buffered `Response` JSON or the native SSE event stream (`event: <type>` lines).
 * Every event leaves with the next `sequence_number` (0, 1, 2, ...), a failure after the stream started included.
 */
import type { FastifyInstance } from 'fastify';
import type { Clock } from '../../core/clock.ts';
import type { Gateway } from '../pipeline.ts';
import type { ResponseStreamEvent } from '../providers/types.ts';
import { responsesAdapter } from '../responses.ts';
import { answerThroughGateway, namedFrame } from './gateway-reply.ts';
import { parseResponsesRequest } from './responses-schema.ts';

export function responsesRoutes(deps: { gateway: Gateway; clock: Clock; appBaseUrl: string | null }) {
  return async function (app: FastifyInstance) {
    app.post('/responses', async (request, reply) => {
      const validated = parseResponsesRequest(request.body);
      let sequence = 0;
      return answerThroughGateway(request, reply, deps.gateway, responsesAdapter(validated, deps.clock.now), {
        appBaseUrl: deps.appBaseUrl,
        format: {
          frame: (event: ResponseStreamEvent) => namedFrame(event.type, { ...event, sequence_number: sequence++ }),
          closing: (event) => event.type === 'response.completed' || event.type === 'response.incomplete',
        },
      });
    });
  };
}
