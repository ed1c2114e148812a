/**
 * How the reference client reaches svc: plain HTTP(S), the data directory's local socket, or an in-process app
 * (`app.inject`). All three speak the same HTTP API, so every admin action takes the same validated, audited path.
 */
import { Agent, type Dispatcher } from 'undici';
import { decodedBody } from './content-coding.ts';

export interface TransportResponse {
  status: number;
  /** Lower-case header names. */
  headers: Record<string, string>;
  /** The body parsed as JSON, the raw text when it is not JSON, null when empty. */
  body: unknown;
  /** The body as received (for error reports). */
  text: string;
}

/** Per-request extras: headers (identity headers of gateway calls) and a signal (deadlines). */
export interface RequestOptions {
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

/** A response whose body is read as it arrives (SSE). */
export interface StreamingResponse {
  status: number;
  headers: Record<string, string>;
  body: AsyncIterable<Uint8Array>;
}

/** One way of sending a request to svc; `close` releases whatever the transport holds (agent, lock, store). */
export interface Transport {
  request(method: string, path: string, body?: unknown, options?: RequestOptions): Promise<TransportResponse>;
  /** Resolves once the response headers arrived; the body streams. */
  stream(method: string, path: string, body: unknown, options?: RequestOptions): Promise<StreamingResponse>;
  close(): Promise<void>;
}

/**
 * A connection error's message without the address it ends with when that is `label`, which the message names already
 * (`connect ENOENT <dir>/svc.sock` on the local socket).
 */
function withoutAddress(cause: string, label: string): string {
  return cause.endsWith(` ${label}`) ? cause.slice(0, -label.length - 1) : cause;
}

/**
 * A buffered answer's body (or a stream's error answer) as it arrives. The connection breaking off midway (reset, cut by a proxy) is named with the
 * call and its status: undici's own error is a bare `TypeError: terminated` that says neither. An aborted request
 * (a deadline, the caller's signal) keeps the abort's error, which its caller recognises.
 */
export async function* untilBrokenOff(body: AsyncIterable<Uint8Array>, call: string, signal: AbortSignal | undefined): AsyncGenerator<Uint8Array> {
  try {
    for await (const chunk of body) yield chunk;
  } catch (error) {
    if (signal?.aborted) throw error;
    throw new Error(`the answer to ${call} broke off: ${(error as Error).message}`, { cause: error });
  }
}

/**
 * A request body as JSON text, serialized before anything is sent: inside the request's error handling, a BigInt or a
 * cycle in the body was reported as "cannot reach svc".
 */
function jsonOf(body: unknown, call: string): string {
  try {
    return JSON.stringify(body);
  } catch (error) {
    throw new TypeError(`the body of ${call} cannot be sent as JSON: ${(error as Error).message}`, { cause: error });
  }
}

/** An answer's headers as one string per name: a header sent more than once (set-cookie) joined as fetch joins it. */
function headerRecord(headers: Record<string, string | string[] | undefined>): Record<string, string> {
  const record: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) record[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return record;
}

/**
 * HTTP through `dispatcher`. Its own request API, not fetch: fetch refuses the ports browsers block (6000, 6665-6669,
 * 10080 and the rest of the Fetch standard's "bad ports") with "bad port", before any connection, so a `svc serve
 * --port 6666` was unreachable for every command while curl reached it. Nothing of a browser's is wanted here: no
 * redirect is followed (svc never redirects; following one would send the prompt and the identity headers to whatever
 * server the Location names and take its answer for svc's: the 3xx is the answer, an SvcApiError like any other
 * outside 2xx) and no content coding is asked for (svc sends none; one a proxy applies unasked is undone:
 * content-coding.ts).
 */
function dispatcherTransport(baseUrl: string, headers: Record<string, string>, label: string, dispatcher: Agent): Transport {
  const base = baseUrl.replace(/\/+$/, '');
  const send = async (method: string, path: string, body: unknown, options: RequestOptions) => {
    const payload = body === undefined ? undefined : jsonOf(body, `${method} ${path}`);
    // Parsed as fetch parsed it: dot segments resolved, the base URL's own path kept in front.
    const url = new URL(`${base}${path}`);
    let response: Dispatcher.ResponseData;
    try {
      response = await dispatcher.request({
        origin: url.origin,
        path: `${url.pathname}${url.search}`,
        method: method as Dispatcher.HttpMethod,
        headers: { ...headers, ...options.headers, ...(payload === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(payload === undefined ? {} : { body: payload }),
        ...(options.signal ? { signal: options.signal } : {}),
      });
    } catch (error) {
      if (options.signal?.aborted) throw error;
      const cause = (error as Error & { cause?: Error }).cause?.message ?? (error as Error).message;
      throw new Error(`cannot reach svc at ${label}: ${withoutAddress(cause, label)}`, { cause: error });
    }
    const responseHeaders = headerRecord(response.headers);
    const call = `${method} ${path} (HTTP ${response.statusCode})`;
    return { status: response.statusCode, headers: responseHeaders, body: decodedBody(response.body, responseHeaders['content-encoding'], call) };
  };
  return {
    async request(method, path, body, options = {}) {
      const response = await send(method, path, body, options);
      const read = await readBody(untilBrokenOff(response.body, `${method} ${path} (HTTP ${response.status})`, options.signal), label);
      return { status: response.status, headers: response.headers, body: read.body, text: read.text };
    },
    async stream(method, path, body, options = {}) {
      const response = await send(method, path, body, options);
      return { status: response.status, headers: response.headers, body: response.body };
    },
    async close() {
      // Requests still in flight are given up (a TUI quitting while its list loads): waiting for them would keep the
      // process alive until they end, which for a server that never answers is undici's 300 s header timeout.
      await dispatcher.destroy();
    },
  };
}

/** The most of one buffered answer the client reads: more than any answer of svc's API, far less than memory. */
export const MAX_ANSWER_BYTES = 128 * 1024 * 1024;

/**
 * An answer's body, read whole (a buffered answer, a stream's error answer) but refused past MAX_ANSWER_BYTES: a
 * server that is not svc may send gigabytes. `body` is the text parsed as JSON, the raw text when it is not JSON, null
 * when empty. Leaving the loop early cancels the body.
 */
export async function readBody(chunks: AsyncIterable<Uint8Array> | null, label: string): Promise<{ text: string; body: unknown }> {
  const decoder = new TextDecoder();
  let received = 0;
  let text = '';
  for await (const chunk of chunks ?? []) {
    received += chunk.byteLength;
    if (received > MAX_ANSWER_BYTES) throw new Error(`the answer from ${label} is larger than ${MAX_ANSWER_BYTES} bytes`);
    text += decoder.decode(chunk, { stream: true });
  }
  text += decoder.decode();
  return { text, body: parseBody(text) };
}

function parseBody(text: string): unknown {
  if (text === '') return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** What svc takes as a bearer token (src/identity/service.ts): visible ASCII, no spaces. */
const BEARER_TOKEN = /^[\x21-\x7e]+$/;

/** What the WHATWG URL parser strips from the ends of its input: C0 controls and spaces (U+0000-U+0020). */
const LEADING_OR_TRAILING_C0_OR_SPACE = /^[\x00-\x20]+|[\x00-\x20]+$/g;

/**
 * The base URL the client puts its paths behind, checked at creation; otherwise every call failed with "cannot reach
 * svc" (`127.0.0.1:8787` without its scheme), addressed no route (a query), or, for a URL with credentials, quoted
 * them in each error: the HTTP client refused such a URL, and the message named the base URL. The value is never quoted here.
 */
function usableBaseUrl(baseUrl: string): string {
  let url: URL | null = null;
  try {
    url = new URL(baseUrl);
  } catch {
    // Not a URL at all: refused below.
  }
  const usable = url !== null && (url.protocol === 'http:' || url.protocol === 'https:') && !url.username && !url.password && !/[?#]/.test(baseUrl);
  if (!usable) throw new TypeError('the base URL must be an http(s) URL without credentials, query or fragment, such as http://127.0.0.1:8787; it is not shown here');
  // Without what the URL parser drops around a URL (spaces, control characters), as it took it: with a path put behind
  // them (`http://127.0.0.1:8787 /api/v1/keys`), every call was "Invalid URL" or addressed `/%20/...`.
  return baseUrl.replace(LEADING_OR_TRAILING_C0_OR_SPACE, '');
}


/**
 * HTTP(S) to a base URL such as `http://127.0.0.1:8787`, with an optional bearer token (trimmed, as svc trims its
 * own `SVC_API_KEY`: a key read from a file keeps its line break). A token svc could never accept is refused here,
 * without quoting it: undici's error for a header value it cannot send quotes the whole value, and every request's
 * error would have carried the API key into the caller's logs.
 */
export function httpTransport(givenBaseUrl: string, token: string | null): Transport {
  const baseUrl = usableBaseUrl(givenBaseUrl);
  const key = token?.trim() ?? '';
  if (key !== '' && !BEARER_TOKEN.test(key)) {
    throw new TypeError('the API key holds a character no svc token has (a space, a line break, a control or non-ASCII character); it is not shown here');
  }
  return dispatcherTransport(baseUrl, key ? { authorization: `Bearer ${key}` } : {}, baseUrl, new Agent());
}

/** HTTP over a unix socket: the local operator of a running `svc serve`. */
export function socketTransport(socketPath: string): Transport {
  return dispatcherTransport('http://localhost', {}, socketPath, new Agent({ connect: { socketPath } }));
}

/** The minimal surface of fastify's `inject` the in-process transport needs. */
export interface Injectable {
  inject(options: { method: string; url: string; headers: Record<string, string>; payload?: string }): PromiseLike<{
    statusCode: number;
    headers: Record<string, unknown>;
    body: string;
  }>;
}

/** Requests into an in-process app; `headers` carries the local-operator marker. */
export function injectTransport(app: Injectable, headers: Record<string, string>, onClose: () => Promise<void>): Transport {
  const send = async (method: string, path: string, body: unknown, options: RequestOptions) => {
    options.signal?.throwIfAborted();
    const response = await app.inject({
      method,
      url: path,
      headers: { ...headers, ...options.headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
    });
    return {
      status: response.statusCode,
      headers: Object.fromEntries(Object.entries(response.headers).map(([name, value]) => [name, String(value)])),
      text: response.body,
    };
  };
  return {
    async request(method, path, body, options = {}) {
      const response = await send(method, path, body, options);
      return { ...response, body: parseBody(response.text) };
    },
    // inject buffers the whole answer: the stream arrives as one chunk.
    async stream(method, path, body, options = {}) {
      const response = await send(method, path, body, options);
      async function* chunks(): AsyncGenerator<Uint8Array> {
        yield Buffer.from(response.text);
      }
      return { status: response.status, headers: response.headers, body: chunks() };
    },
    close: onClose,
  };
}
