/**
 * A fake chat-completions-compatible upstream on a real port (STYLE.md section 5: live-provider paths are tested
 * against a server the test starts). Each test installs a handler; every request is recorded with its parsed body
 * and whether the client closed the connection before the answer ended.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Cleanups } from './process.ts';
import { loadScaled } from './load-scaled.ts';

export interface RecordedRequest {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: any;
  /** Set when the client went away before the response finished. */
  clientClosed: boolean;
}

export type UpstreamHandler = (request: RecordedRequest, res: ServerResponse) => void | Promise<void>;

export interface FakeUpstream {
  /** e.g. `http://127.0.0.1:PORT/v1` */
  baseUrl: string;
  requests: RecordedRequest[];
  handle(handler: UpstreamHandler): void;
  /** Resolves when some request's client closed early. */
  clientClosed(): Promise<RecordedRequest>;
}

export async function startFakeUpstream(t: Cleanups, handler?: UpstreamHandler): Promise<FakeUpstream> {
  let current: UpstreamHandler = handler ?? ((_req, res) => sendJson(res, 404, { error: { message: 'no handler' } }));
  const requests: RecordedRequest[] = [];
  const closedWaiters: Array<(r: RecordedRequest) => void> = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      let body: unknown = text;
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {
        // keep the raw text
      }
      const recorded: RecordedRequest = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body, clientClosed: false };
      requests.push(recorded);
      res.on('close', () => {
        if (!res.writableFinished) {
          recorded.clientClosed = true;
          for (const waiter of closedWaiters.splice(0)) waiter(recorded);
        }
      });
      Promise.resolve(current(recorded, res)).catch((error) => {
        if (!res.headersSent) sendJson(res, 500, { error: { message: String(error) } });
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    handle(next) {
      current = next;
    },
    clientClosed() {
      const already = requests.find((r) => r.clientClosed);
      return already ? Promise.resolve(already) : new Promise((resolve) => closedWaiters.push(resolve));
    },
  };
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

/** Start an SSE answer; write raw text with `res.write`. */
export function startSse(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  res.flushHeaders();
}

/** An SSE answer of these chunks, each a `data:` event, then `data: [DONE]` unless `done` is false. */
export function sendChunks(res: ServerResponse, chunks: unknown[], done = true): void {
  startSse(res);
  for (const chunk of chunks) res.write(`data: ${JSON.stringify(chunk)}\n\n`);
  if (done) res.write('data: [DONE]\n\n');
  res.end();
}

/**
 * Until the client goes away: an upstream that never answers (or never goes on). One that answers after a sleep
 * races the client's own timer on a loaded machine: a test process held off its CPU past both finds them due at once,
 * and the answer may go out before the client's abort reaches the socket.
 */
export function untilClientCloses(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => (res.destroyed ? resolve() : res.once('close', () => resolve())));
}

/**
 * The upstream of a test whose client leaves mid-stream: `writeNext(i)` every `everyMs` until the client goes away.
 * A stream of fixed length (200 events x 20 ms) races the client's abort on a loaded machine, and may end normally
 * first; this one ends only when the client leaves, or after a bound (loadScaled: under the file's test timeout) so a
 * client that never leaves fails the test's assertions rather than hanging it. Resolves whether the client left.
 */
export async function streamUntilClientCloses(res: ServerResponse, writeNext: (i: number) => void, everyMs = 20): Promise<boolean> {
  const deadline = Date.now() + loadScaled(60_000);
  for (let i = 0; !res.destroyed && Date.now() < deadline; i++) {
    writeNext(i);
    await sleep(everyMs);
  }
  return res.destroyed;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A `chat.completion.chunk` with one content delta. */
export function contentChunk(content: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: 'chatcmpl-fake',
    object: 'chat.completion.chunk',
    created: 1700000000,
    model: 'gpt-4o-mini',
    choices: [{ index: 0, delta: { content }, finish_reason: null }],
    ...extra,
  };
}

/** A messages-wire stream answering `text`, as [event name, data] pairs; its message_start reports `startUsage`. */
export function messageEvents(text: string, startUsage: Record<string, number> = { input_tokens: 12, output_tokens: 1 }): Array<[string, Record<string, unknown>]> {
  return [
    ['message_start', { type: 'message_start', message: { id: 'msg_up', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [], stop_reason: null, stop_sequence: null, usage: startUsage } }],
    ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }],
    ['ping', { type: 'ping' }],
    ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } }],
    ['content_block_stop', { type: 'content_block_stop', index: 0 }],
    ['message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 5 } }],
    ['message_stop', { type: 'message_stop' }],
  ];
}

/** A buffered `chat.completion` answer. */
export function completion(content: string, model = 'gpt-4o-mini'): Record<string, unknown> {
  return {
    id: 'chatcmpl-fake',
    object: 'chat.completion',
    created: 1700000000,
    model,
    choices: [{ index: 0, message: { role: 'assistant', content, refusal: null }, finish_reason: 'stop', logprobs: null }],
    usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 },
  };
}

/** An embeddings answer; by default the vector of input i is `[i, 0.5, 0.5]`. */
export function embeddingsAnswer(
  inputs: unknown[],
  model: string,
  vectorOf: (input: unknown, index: number) => number[] = (_input, index) => [index, 0.5, 0.5],
): Record<string, unknown> {
  return {
    object: 'list',
    model,
    data: inputs.map((input, index) => ({ object: 'embedding', index, embedding: vectorOf(input, index) })),
    usage: { prompt_tokens: inputs.length, total_tokens: inputs.length },
  };
}
