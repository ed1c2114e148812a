/**
 * The HTTP edge every model wire shares: cache-control headers in, client-disconnect signal, the evidence headers
 * (`x-svc-run-id`, `x-svc-route`, `x-svc-run-url`) and JSON or SSE out. A stream's frames are written to the
 * response as the pipeline's generator yields them, waiting for `drain` when the client reads slower (backpressure),
 * and stopping the generator (so the pipeline's `finally` runs) when the client is gone.
 */
import type { ServerResponse } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../../core/errors.ts';
import { authOf } from '../../http/surface.ts';
import { GatewaySignal } from '../call-signal.ts';
import { parseCacheControls } from '../cache-controls.ts';
import type { Gateway, GatewayCall, GatewayResult, StreamItem, WireAdapter } from '../pipeline.ts';
import { runUrl } from './run-headers.ts';

function headerValue(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

/** A signal that fires when the client goes away before its response is finished: it cancels the upstream call. */
export function clientGoneSignal(request: FastifyRequest, reply: FastifyReply): GatewaySignal {
  const signal = new GatewaySignal();
  const onClose = () => {
    if (!reply.raw.writableFinished) signal.abort(new Error('client disconnected'));
  };
  reply.raw.once('close', onClose);
  request.raw.once('aborted', onClose);
  return signal;
}

/** The pipeline call of a request: identity, cache controls, and a signal that fires when the client goes away. */
function gatewayCall(request: FastifyRequest, reply: FastifyReply): GatewayCall {
  return {
    auth: authOf(request),
    controls: parseCacheControls({ bypass: headerValue(request, 'x-svc-cache-bypass'), cacheControl: headerValue(request, 'cache-control') }),
    requestId: request.id,
    signal: clientGoneSignal(request, reply),
    log: request.log,
  };
}

/**
 * What a failure of the pipeline is answered with: one after its run started carries the run's id and route
 * (pipeline.ts), and gets the run's dashboard address here, as an answer does (docs/gateway.md, Headers). Only on the
 * failure path, so the answered path pays nothing.
 */
function withRunUrl(error: unknown, request: FastifyRequest, appBaseUrl: string | null): unknown {
  const runId = error instanceof AppError ? error.headers['x-svc-run-id'] : undefined;
  if (runId !== undefined) (error as AppError).headers['x-svc-run-url'] = runUrl(appBaseUrl, request, runId);
  return error;
}

/**
 * A wire's request through the pipeline, its result sent with the run's headers (`sendGatewayResult`), and a failure
 * thrown with the run's address when its run had started (`withRunUrl`): the one way each wire answers.
 */
export async function answerThroughGateway<Res, Ev>(
  request: FastifyRequest,
  reply: FastifyReply,
  gateway: Gateway,
  adapter: WireAdapter<Res, Ev>,
  options: { appBaseUrl: string | null; format: SseFormat<Ev> },
) {
  let result: GatewayResult<Res, Ev>;
  try {
    result = await gateway.handle(adapter, gatewayCall(request, reply));
  } catch (error) {
    throw withRunUrl(error, request, options.appBaseUrl);
  }
  return sendGatewayResult(request, reply, result, options);
}

export interface SseFormat<Ev> {
  /** The SSE text of one event (`data: ...\n\n`, or with an `event:` line). */
  frame(event: Ev, terminal: boolean): string | null;
  /**
   * Whether an event ends a complete answer (messages' `message_stop`, responses' `response.completed`): its frame
   * goes out with the stream's end, so that it too waits for the run's commit while answers do.
   */
  closing?(event: Ev): boolean;
  /** Sent after the last event of a complete stream (chat's `data: [DONE]`). */
  trailer?: string;
}

/** Resolves once node's HTTP response has run the ticks queued so far: the one that uncorks its socket among them. */
function afterQueuedTicks(): Promise<void> {
  return new Promise((resolve) => process.nextTick(resolve));
}

/**
 * The SSE text of a gateway stream, frame by frame. Closes the stream if it ends early (a terminal error event, before
 * its frame; the consumer stopping); after the last frame of a complete one, its writer does (`writeFrames`, once the
 * response ended).
 */
export async function* sseText<Ev>(
  stream: { items: AsyncGenerator<StreamItem<Ev>>; close(): Promise<void>; recorded(): Promise<void> | null },
  format: SseFormat<Ev>,
): AsyncGenerator<string> {
  let flushed = false;
  let complete = false;
  let closingFrame: string | null = null;
  try {
    for await (const item of stream.items) {
      const text = format.frame(item.event, item.terminal === true);
      if (closingFrame !== null) {
        yield closingFrame; // an event after the closing one (it does not happen with the providers of this build)
        closingFrame = null;
      }
      if (item.terminal) {
        // A stream failing midway: its run is recorded (closing the stream settles it) before the client reads the
        // failure, and while answers wait for their runs' commit, the failure waits for it as a complete end does.
        await stream.close();
        complete = true;
        const recorded = stream.recorded();
        if (recorded !== null) await recorded;
        if (text) yield text;
        return;
      }
      if (text && format.closing?.(item.event)) {
        // The terminal event of an upstream stream is its last: holding it costs the stream's end a few microtasks.
        closingFrame = text;
      } else if (text) {
        yield text;
        if (!flushed) {
          // node's HTTP response corks its socket on a write and uncorks it in a tick (process.nextTick), and ticks
          // run only once the microtask queue is empty. An upstream burst already buffered (or a cached answer) is
          // relayed entirely in microtasks, so without this wait the first frame would leave only after the last one
          // had been relayed and the run finalised.
          flushed = true;
          await afterQueuedTicks();
        }
      }
    }
    // While answers wait for their runs' commit, a complete stream's end does.
    const recorded = stream.recorded();
    if (recorded !== null) await recorded;
    if (closingFrame !== null) yield closingFrame;
    if (format.trailer) yield format.trailer;
    complete = true;
  } finally {
    if (!complete) await stream.close();
  }
}

/** Until the response can take more (`drain`) or is gone (`close`). */
function writable(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    if (res.destroyed) return resolve();
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

/**
 * Write the frames to the response as they come. Straight to node's response rather than through a Readable piped
 * into it: that costs a stream's machinery per frame and a tick before the first one, on the time to first byte.
 * The headers leave with the first frame.
 */
export async function writeFrames(reply: FastifyReply, frames: AsyncGenerator<string>, stream: { close(): Promise<void> }): Promise<void> {
  const res = reply.raw;
  try {
    res.statusCode = reply.statusCode;
    for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) res.setHeader(name, value);
    for await (const text of frames) {
      if (res.destroyed) break; // the client is gone: leaving the loop stops the generator, which closes the stream
      if (!res.write(text)) await writable(res);
    }
    // `end` hands the response's last bytes to the socket at once (it uncorks it): the stream is closed, and its run
    // recorded, after them (`finally`), instead of delaying them.
    if (!res.destroyed) res.end();
  } catch (error) {
    reply.log.error({ err: error }, 'a gateway stream failed after its headers were sent');
    res.destroy(error as Error);
  } finally {
    // The generator's `finally` did this already if the stream ended early. Recording a completed stream's run runs
    // here: a failure of it is logged, never left to reject the write nobody awaits (`sendGatewayResult`), which
    // would end the process as an unhandled rejection, every tenant's requests with it.
    await stream.close().catch((error: unknown) => reply.log.error({ err: error }, "a gateway stream's run could not be recorded"));
  }
}

function sendGatewayResult<Res, Ev>(
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
    // The answer as the pipeline wrote it out once (and stores it), with the type fastify gives an object it writes.
    reply.type('application/json; charset=utf-8');
    const recorded = result.recorded();
    if (recorded !== null) return recorded.then(() => reply.send(result.json));
    const sent = reply.send(result.json);
    result.settle();
    return sent;
  }
  reply.header('content-type', 'text/event-stream; charset=utf-8').header('cache-control', 'no-cache').header('x-accel-buffering', 'no');
  // fastify's hooks that follow the response (logging, onResponse) still run on its `finish` or `close`.
  reply.hijack();
  void writeFrames(reply, sseText(result, options.format), result);
  return reply;
}

/** `data: <json>\n\n` */
export function dataFrame(value: unknown): string {
  return `data: ${JSON.stringify(value)}\n\n`;
}

/** `event: <name>\ndata: <json>\n\n` */
export function namedFrame(name: string, value: unknown): string {
  return `event: ${name}\ndata: ${JSON.stringify(value)}\n\n`;
}
