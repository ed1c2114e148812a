/**
 * The HTTP edge every model wire shares: cache-control headers in, client-disconnect signal, the evidence headers
 * (`x-svc-run-id`, `x-svc-route`, `x-svc-run-url`) and JSON or SSE out. A stream is a Node Readable over the
 * pipeline's generator, so backpressure holds and closing it (client gone) runs the pipeline's `finally`.
 */
import { Readable } from 'node:stream';
import { setImmediate } from 'node:timers/promises';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { authOf } from '../../http/surface.ts';
import { parseCacheControls } from '../cache-controls.ts';
import type { GatewayCall, GatewayResult, StreamItem } from '../pipeline.ts';
import { runUrl } from './run-headers.ts';

function headerValue(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

/** The pipeline call of a request: identity, cache controls, and a signal that fires when the client goes away. */
export function gatewayCall(request: FastifyRequest, reply: FastifyReply): GatewayCall {
  const controller = new AbortController();
  const onClose = () => {
    if (!reply.raw.writableFinished) controller.abort(new Error('client disconnected'));
  };
  reply.raw.once('close', onClose);
  request.raw.once('aborted', onClose);
  return {
    auth: authOf(request),
    controls: parseCacheControls({ bypass: headerValue(request, 'x-svc-cache-bypass'), cacheControl: headerValue(request, 'cache-control') }),
    requestId: request.id,
    signal: controller.signal,
  };
}

export interface SseFormat<Ev> {
  /** The SSE text of one event (`data: ...\n\n`, or with an `event:` line). */
  frame(event: Ev, terminal: boolean): string | null;
  /** Sent after the last event of a complete stream (chat's `data: [DONE]`). */
  trailer?: string;
}

/** The SSE text of a gateway stream, frame by frame; closes the stream however it ends. */
export async function* sseText<Ev>(stream: { items: AsyncGenerator<StreamItem<Ev>>; close(): Promise<void> }, format: SseFormat<Ev>): AsyncGenerator<string> {
  let flushed = false;
  try {
    for await (const item of stream.items) {
      const text = format.frame(item.event, item.terminal === true);
      if (text) {
        yield text;
        if (!flushed) {
          // node's HTTP response corks its socket on a write and uncorks it on the next tick, which runs only once
          // the microtask queue is empty. An upstream burst already buffered (or a cached answer) is relayed
          // entirely in microtasks, so without this turn of the event loop the first frame would leave only after
          // the last one had been relayed and the run finalised.
          flushed = true;
          await setImmediate();
        }
      }
      if (item.terminal) return;
    }
    if (format.trailer) yield format.trailer;
  } finally {
    await stream.close();
  }
}

export function sendGatewayResult<Res, Ev>(
  request: FastifyRequest,
  reply: FastifyReply,
  result: GatewayResult<Res, Ev>,
  options: { appBaseUrl: string | null; format: SseFormat<Ev> },
) {
  reply.header('x-svc-run-id', result.runId);
  reply.header('x-svc-route', result.route);
  reply.header('x-svc-run-url', runUrl(options.appBaseUrl, request, result.runId));
  // Not a standard header: the provider that served this answer (absent on a cache hit), for the reference client.
  if (result.provider) reply.header('x-svc-provider', result.provider);
  if (result.kind === 'json') {
    const sent = reply.send(result.body);
    result.settle();
    return sent;
  }
  reply.header('content-type', 'text/event-stream; charset=utf-8').header('cache-control', 'no-cache').header('x-accel-buffering', 'no');
  const readable = Readable.from(sseText(result, options.format), { objectMode: false });
  // Destroyed before its first read (client gone at once): sseText never started, so close the stream here.
  readable.once('close', () => void result.close());
  return reply.send(readable);
}

/** `data: <json>\n\n` */
export function dataFrame(value: unknown): string {
  return `data: ${JSON.stringify(value)}\n\n`;
}

/** `event: <name>\ndata: <json>\n\n` */
export function namedFrame(name: string, value: unknown): string {
  return `event: ${name}\ndata: ${JSON.stringify(value)}\n\n`;
}
