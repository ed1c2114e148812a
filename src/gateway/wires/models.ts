/**
 * `GET /v1/models` and `GET /v1/models/{model}` (SPEC 4.2): the catalogue of src/gateway/models.ts in the
 * chat-completions shape. The model id is one URL-encoded path segment (`svc%2Fchorus`); fastify decodes an encoded
 * slash inside one parameter. An unencoded `svc/chorus` (two segments) is resolved too, as a courtesy. No run.
 */
import type { FastifyInstance } from 'fastify';
import { AppError } from '../../core/errors.ts';
import { findModel, listModels } from '../models.ts';

function modelNotFound(id: string): AppError {
  return new AppError('model_not_found', {
    message: `The model '${id}' does not exist or you do not have access to it.`,
    details: { param: 'model' },
  });
}

/**
 * A `.` or `..` path segment. Every URL parser resolves them before a request goes out (WHATWG's, curl's, fastify's
 * own inject: `/v1/models/./gpt-4o` is `/v1/models/gpt-4o`, `/v1/models/x/..` the list), and the official clients
 * refuse to build one, so only a raw request holds one; the router does not resolve them, and answered such a path
 * as the model `./gpt-4o` or `x/..`, an id the URL does not name. Refused rather than resolved here: resolving could
 * not reach the list or another route, as the URL would. `%2E` is refused before routing (src/http/percent-encoding.ts),
 * so a parameter is `.` or `..` only as sent raw; an id holding one, encoded as the clients do (`.%2Fx`), is one
 * segment and an id like any other.
 */
function isDotSegment(segment: string): boolean {
  return segment === '.' || segment === '..';
}

const dotSegmentRefusal = () =>
  new AppError('invalid_request', {
    message: "The model path holds a dot segment ('.' or '..'), which a URL resolves before it is sent: send the model id as one encoded segment (./x as .%2Fx).",
    details: { param: 'model' },
  });

export function modelsRoutes() {
  return async function modelsPlugin(app: FastifyInstance): Promise<void> {
    app.get('/models', async () => listModels());

    app.get<{ Params: { model: string } }>('/models/:model', async (request) => {
      const { model: id } = request.params;
      if (isDotSegment(id)) throw dotSegmentRefusal();
      const model = findModel(id);
      if (!model) throw modelNotFound(id);
      return model;
    });

    app.get<{ Params: { owner: string; name: string } }>('/models/:owner/:name', async (request) => {
      const { owner, name } = request.params;
      if (isDotSegment(owner) || isDotSegment(name)) throw dotSegmentRefusal();
      const id = `${owner}/${name}`;
      const model = findModel(id);
      if (!model) throw modelNotFound(id);
      return model;
    });
  };
}
