/**
 * The runs endpoints of SPEC 4.9 (list, detail, trace window, route explanation, integrity, economics, receipt,
 * replay bundle, evidence packet, feedback) and the SDK ingestion endpoints of SPEC 4.19 (ingest, trace).
 */
import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { jsonSlices, objectSlices } from '../core/json-slices.ts';
import { pathParameter } from '../http/path-parameters.ts';
import { authOf } from '../http/surface.ts';
import { instantQuery } from '../core/instant.ts';
import { optionalQueryInteger, paginationQuery, queryInteger } from '../core/pagination.ts';
import { knownQuery, noQuery, optionalChoice, optionalText } from '../core/query-parameters.ts';
import { DETAIL_SECTION_DEFAULT_LIMIT, EVENT_PAGE_DEFAULT_LIMIT, RUN_FEEDBACK_MAX, type RunsService } from './service.ts';
import { RUN_MODEL_MAX_LENGTH, RUN_ROUTES, RUN_STATUSES } from './types.ts';
import { ingestBody, traceBody } from './sdk-events.ts';

/**
 * Answer a document that may be tens of MiB (an evidence packet at a run's limits, a replay bundle of a 32 MiB request)
 * as the JSON text fastify would send, written in slices as the client reads it: one JSON.stringify of it held the
 * event loop ~0.3-0.5 s. Everything that can fail (a 404, a read) happened before: the status and headers are final.
 */
function sendInSlices(reply: FastifyReply, document: unknown): FastifyReply {
  return reply.type(JSON_TYPE).send(Readable.from(jsonSlices(document)));
}

const JSON_TYPE = 'application/json; charset=utf-8';

/** The packet is one JSON document, offered as a download (browsers save it; API clients just read the body). */
function asDownload(reply: FastifyReply, runId: string): FastifyReply {
  return reply.header('content-disposition', `attachment; filename="evidence-${runId.replace(/[^A-Za-z0-9_-]/g, '_')}.json"`);
}

const listFields = paginationQuery(50, 200).extend({
  route: optionalChoice(RUN_ROUTES as [string, ...string[]]),
  status: optionalChoice(RUN_STATUSES as [string, ...string[]]),
  /** Provider names are svc's own (chatcomp, chatcomp-tenant, messages, mock, ...). */
  provider: optionalText(200),
  /** As long as a gateway run's model may be, so that every such run can be found by it. */
  model: optionalText(RUN_MODEL_MAX_LENGTH),
  /** ISO 8601 timestamp or epoch milliseconds, years 0000-9999. */
  since: instantQuery,
  /** true: only SDK-ingested prompts; false: leave them out (they are recorded on the live route). */
  ingested: optionalChoice(['true', 'false']),
  /** A run id: the previous page's `pagination.nextBefore`. */
  before: optionalText(200),
});

const windowFields = z.object({
  limit: queryInteger(1, 500, EVENT_PAGE_DEFAULT_LIMIT),
  before: optionalQueryInteger(1),
});

/** Run detail's windows: the trace's (as /events) and its side effects' and feedback records' (newest kept). */
const detailFields = windowFields.extend({
  sideEffectLimit: queryInteger(1, 500, DETAIL_SECTION_DEFAULT_LIMIT),
  /** Exclusive side-effect seq (`sideEffectWindow.nextBefore`). */
  sideEffectBefore: optionalQueryInteger(1),
  feedbackLimit: queryInteger(1, RUN_FEEDBACK_MAX, DETAIL_SECTION_DEFAULT_LIMIT),
  /** Exclusive 1-based position in the run's feedback (`feedbackWindow.nextBefore`). */
  feedbackBefore: optionalQueryInteger(1),
});

const listQuery = knownQuery(listFields);
const windowQuery = knownQuery(windowFields);
const detailQuery = knownQuery(detailFields);

/** `{limit, before?}` without an absent `before` (exactOptionalPropertyTypes). */
const windowOf = (limit: number, before: number | undefined) => ({ limit, ...(before !== undefined ? { before } : {}) });

const params = z.object({ id: pathParameter });

/** The run id of a route that takes no query: a parameter sent to it is refused, not ignored (query-parameters.ts). */
function queryless(request: FastifyRequest): string {
  const { id } = params.parse(request.params);
  noQuery.parse(request.query);
  return id;
}

export function runsRoutes(runs: RunsService) {
  return async function (app: FastifyInstance) {
    app.get('/runs', async (request) => {
      const query = listQuery.parse(request.query);
      return runs.list(authOf(request), {
        limit: query.limit,
        offset: query.offset,
        ...(query.route ? { route: query.route } : {}),
        ...(query.status ? { status: query.status } : {}),
        ...(query.provider ? { provider: query.provider } : {}),
        ...(query.model ? { model: query.model } : {}),
        ...(query.since !== undefined ? { since: query.since } : {}),
        ...(query.ingested !== undefined ? { ingested: query.ingested === 'true' } : {}),
        ...(query.before ? { before: query.before } : {}),
      });
    });

    app.get('/runs/:id', async (request) => {
      const { id } = params.parse(request.params);
      const query = detailQuery.parse(request.query);
      return runs.get(authOf(request), id, {
        events: windowOf(query.limit, query.before),
        sideEffects: windowOf(query.sideEffectLimit, query.sideEffectBefore),
        feedback: windowOf(query.feedbackLimit, query.feedbackBefore),
      });
    });

    app.get('/runs/:id/events', async (request) => {
      const { id } = params.parse(request.params);
      const { limit, before } = windowQuery.parse(request.query);
      return runs.events(authOf(request), id, { limit, ...(before !== undefined ? { before } : {}) });
    });

    app.get('/runs/:id/route', async (request) => runs.route(authOf(request), queryless(request)));

    app.get('/runs/:id/integrity', async (request) => runs.integrity(authOf(request), queryless(request)));

    app.get('/runs/:id/economics', async (request) => runs.economics(authOf(request), queryless(request)));

    app.get('/runs/:id/receipt', async (request) => runs.receipt(authOf(request), queryless(request)));

    app.get('/receipts/:id', async (request) => runs.receipt(authOf(request), queryless(request)));

    // The bundle and the packet are answered to HEAD by their own handlers, which make the checks GET makes before
    // its first byte (the run is the caller's, the bundle exists) and read nothing else: fastify's HEAD runs the GET
    // handler and drops its body, so a HEAD read and wrote the whole document (up to ~41 MiB for a packet).
    app.get('/runs/:id/replay-bundle', { exposeHeadRoute: false }, async (request, reply) =>
      sendInSlices(reply, await runs.replayBundle(authOf(request), queryless(request))),
    );
    app.head('/runs/:id/replay-bundle', async (request, reply) => {
      await runs.checkReplayBundle(authOf(request), queryless(request));
      return reply.type(JSON_TYPE).send();
    });

    app.get('/runs/:id/evidence-packet', { exposeHeadRoute: false }, async (request, reply) => {
      const id = queryless(request);
      const members = await runs.evidencePacket(authOf(request), id);
      // Written section by section as it is read: a failure after the first byte aborts the response (docs/evidence.md).
      return asDownload(reply, id).type(JSON_TYPE).send(Readable.from(objectSlices(members)));
    });
    app.head('/runs/:id/evidence-packet', async (request, reply) => {
      const id = queryless(request);
      await runs.find(authOf(request), id);
      return asDownload(reply, id).type(JSON_TYPE).send();
    });

    app.post('/runs/:id/feedback', async (request, reply) => {
      const feedback = await runs.rate(authOf(request), params.parse(request.params).id, request.body);
      return reply.status(201).send({ feedback });
    });

    app.post('/runs/:id/feedback/metrics', async (request, reply) => {
      const feedback = await runs.addMetrics(authOf(request), params.parse(request.params).id, request.body);
      return reply.status(201).send({ feedback });
    });

    app.post('/ingest/prompt', async (request, reply) => {
      const result = await runs.ingestPrompt(authOf(request), ingestBody.parse(request.body));
      return reply.status(201).send(result);
    });

    app.post('/trace', async (request, reply) => {
      const event = await runs.appendTrace(authOf(request), traceBody.parse(request.body));
      // A retry of an event the run holds (same idempotency key) appended nothing: 200, not 201 Created.
      return reply.status(event.replayed ? 200 : 201).send({ ok: true, ...event });
    });
  };
}
