/**
 * `GET /v1/models` and `GET /v1/models/{model}` (SPEC 4.2): the catalogue of src/gateway/models.ts in the
 * chat-completions shape. The model id is one URL-encoded path segment (`svc%2Fchorus`); fastify decodes an encoded
 * slash inside one parameter. An unencoded `svc/chorus` (two segments) is resolved too, as a courtesy. No run.
 */
import type { FastifyInstance } from 'fastify';
import { AppError } from '../../core/errors.ts';
import { DOT_SEGMENT_PROBLEM, isDotSegment } from '../../http/path-parameters.ts';
import { findModel, listModels } from '../models.ts';

function modelNotFound(id: string): AppError {
  return new AppError('model_not_found', {
    message: `The model '${id}' does not exist or you do not have access to it.`,
    details: { param: 'model' },
  });
}

/** A `.` or `..` segment of the model's path: svc's rule for every path parameter (src/http/path-parameters.ts). */
const dotSegmentRefusal = () =>
  new AppError('invalid_request', {
    message: `A segment of the model path ${DOT_SEGMENT_PROBLEM}: send the model id as one encoded segment (./x as .%2Fx).`,
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
