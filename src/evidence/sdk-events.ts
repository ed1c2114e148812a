/**
 * Trace events an SDK may append to a run (SPEC 6.1, 4.19 `POST /api/v1/trace`). Everything else in a run's trace
 * is written by svc itself (`run.*`, `cache.*`, `provider.*`, `chorus.*`, ...) and cannot be forged through the API.
 * The three named SPEC types, plus the outcome of a planned side effect (docs/evidence.md).
 */
import { z } from 'zod';
import { modelField, runNameField } from './model-field.ts';

export const TRACE_PAYLOAD_MAX_BYTES = 256 * 1024;
/**
 * What a run's trace may hold: events of every kind, and bytes of payload appended by clients. Each read of a whole
 * trace (integrity, the evidence packet; a page at a time) reads all of it, so a trace grown without bound
 * by appends (any key of the tenant may append) would hold the event loop and gigabytes of memory while it is read.
 */
export const RUN_TRACE_MAX_EVENTS = 10_000;
export const RUN_CLIENT_TRACE_MAX_BYTES = 16 * 1024 * 1024;

const name = z.string().trim().min(1).max(200);
const level = z.number().int().min(0).max(4);
const idempotencyKey = z.string().trim().min(1).max(120);
const reason = z.string().max(2000);

const SDK_PAYLOADS = {
  'tool.called': z.looseObject({ name, args: z.unknown(), sideEffectLevel: level }),
  'tool.completed': z.looseObject({ name, result: z.unknown(), cached: z.boolean().optional() }),
  'side_effect.planned': z.looseObject({ toolName: name, level, payload: z.unknown(), idempotencyKey: idempotencyKey.optional() }),
  'side_effect.executed': z.looseObject({ toolName: name, idempotencyKey: idempotencyKey.optional(), reason: reason.optional() }),
  'side_effect.suppressed': z.looseObject({ toolName: name, idempotencyKey: idempotencyKey.optional(), reason: reason.optional() }),
  'side_effect.blocked': z.looseObject({ toolName: name, idempotencyKey: idempotencyKey.optional(), reason: reason.optional() }),
} as const;

export type SdkEventType = keyof typeof SDK_PAYLOADS;
export const SDK_EVENT_TYPES = Object.keys(SDK_PAYLOADS) as SdkEventType[];

export const traceBody = z
  .strictObject({
    runId: z.string().min(1).max(200),
    type: z.enum(SDK_EVENT_TYPES as [SdkEventType, ...SdkEventType[]], {
      error: () => `type must be one of ${SDK_EVENT_TYPES.join(', ')}`,
    }),
    payload: z.record(z.string(), z.unknown()),
  })
  .transform((body, ctx) => {
    const size = Buffer.byteLength(JSON.stringify(body.payload));
    if (size > TRACE_PAYLOAD_MAX_BYTES) {
      ctx.addIssue({ code: 'custom', path: ['payload'], message: `payload is larger than ${TRACE_PAYLOAD_MAX_BYTES} bytes` });
      return z.NEVER;
    }
    const result = SDK_PAYLOADS[body.type].safeParse(body.payload);
    if (!result.success) {
      for (const issue of result.error.issues) ctx.addIssue({ ...issue, path: ['payload', ...issue.path] } as never);
      return z.NEVER;
    }
    // The payload as validated, not as sent: names and idempotency keys are checked trimmed, so they are stored
    // trimmed, or a later event naming the same tool or key would not find the record (side-effects.ts compares
    // them as stored). Extra fields pass through unchanged (loose objects).
    // Its size as sent (an upper bound of the stored one) counts against the run's trace budget.
    return { ...body, payload: result.data as Record<string, unknown>, payloadBytes: size };
  });

export type TraceBody = z.infer<typeof traceBody>;

const metadataValue = z.union([z.string().max(2000), z.number().finite(), z.boolean(), z.null()]);

/**
 * `POST /api/v1/ingest/prompt`: an externally handled prompt, recorded as a completed observed run. A string
 * `metadata.model` names the run's model, so it is held to the gateway's rule for one (`model`, trimmed): a longer
 * or unprintable one would record a run the runs list's `model` filter cannot find. `source` names its provider, listed,
 * filtered and attributed beside svc's own, so it is held to the same rule: `langchain\u200b` read as `langchain`.
 */
export const ingestBody = z
  .strictObject({
    source: runNameField('source', 100),
    prompt: z.string().min(1).max(512 * 1024),
    sessionId: z.string().trim().min(1).max(200).optional(),
    metadata: z
      .record(z.string().regex(/^[A-Za-z0-9_\-:./]{1,64}$/, 'metadata keys are 1-64 letters, digits, _ - : . /'), metadataValue)
      .refine((value) => Object.keys(value).length <= 32, 'at most 32 metadata entries')
      .optional(),
  })
  .transform((body, ctx) => {
    const named = body.metadata?.model;
    if (typeof named !== 'string') return { ...body, model: 'external' };
    const model = modelField.safeParse(named);
    if (!model.success) {
      for (const issue of model.error.issues) ctx.addIssue({ ...issue, path: ['metadata', 'model', ...issue.path] } as never);
      return z.NEVER;
    }
    return { ...body, model: model.data };
  });

export type IngestBody = z.infer<typeof ingestBody>;
