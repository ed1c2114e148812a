/**
 * Reading upstream bodies within bounds. svc holds an upstream's answer whole (parsed; a stream's assembled for its
 * run and the cache), so its size is bounded: unbounded, a buffered answer of hundreds of megabytes, an SSE line that
 * never ends or streamed tool-call arguments that never close grew svc's heap until V8 ended the process, and every
 * tenant's requests with it. An answer past the bound fails its call as `bad_response` (502, or a stream's error
 * event), like any other answer svc cannot use.
 */
import { pipeline, type Readable, type Transform } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import type { Dispatcher } from 'undici';
import { answerBudgetFailure, countAnswerChunk, type AnswerBudget } from '../answer-budget.ts';
import type { CallSignal } from '../call-signal.ts';

type Body = Dispatcher.ResponseData['body'];

/** Error bodies are read up to this many bytes; the rest is discarded. */
export const MAX_ERROR_BODY_BYTES = 64 * 1024;

/**
 * The most bytes an upstream answer may have, buffered or streamed (`SVC_PROVIDER_MAX_ANSWER_BYTES`). The longest
 * answers models give (~128,000 tokens) take ~25-35 MB as a stream: each token is an SSE event of ~200-250 bytes.
 */
export const DEFAULT_MAX_ANSWER_BYTES = 64 * 1024 * 1024;

/**
 * An embeddings answer may be this many times the bound: its floats are written out in JSON (~20 bytes each), and
 * 2,048 inputs of 3,072 dimensions are ~126 MB, of 4,096 (the largest models') ~168 MB.
 */
export const EMBEDDINGS_ANSWER_FACTOR = 4;

/**
 * The body as text, cut at `limit` bytes, read for at most `withinMs`: what came by then (an error body trickling in
 * a byte at a time would otherwise hold a stream's request, waiting only for the idle timeout between its bytes).
 */
export async function readLimited(body: Readable, limit: number, withinMs = Infinity): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  let timedOut = false;
  const timer = Number.isFinite(withinMs)
    ? setTimeout(() => {
        timedOut = true;
        body.destroy();
      }, withinMs)
    : null;
  try {
    for await (const chunk of body) {
      const buf = chunk as Buffer;
      if (size + buf.length > limit) {
        chunks.push(buf.subarray(0, limit - size));
        body.destroy();
        break;
      }
      chunks.push(buf);
      size += buf.length;
    }
  } catch (error) {
    if (!timedOut) throw error;
  } finally {
    if (timer) clearTimeout(timer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The codings an upstream or a proxy before it applies (those undici's decompress interceptor takes), by decoder. */
const DECODERS: ReadonlyMap<string, () => Transform> = new Map<string, () => Transform>([
  ['gzip', createGunzip],
  ['x-gzip', createGunzip],
  ['deflate', createInflate],
  ['br', createBrotliDecompress],
]);

/**
 * The most codings an error answer's body is decoded through, as undici's own decoders (its fetch and decompress
 * interceptor, nodejs/undici#4729). Each is a decoder made before a byte is read: a header naming thousands (a 16 KiB
 * header holds ~3,000 `gzip`) cost ~30 MB to make them, and a body nested as deep ~95 s and ~100 MB to decode, per
 * answer of an upstream a tenant key may point anywhere.
 */
const MAX_CONTENT_CODINGS = 5;

/**
 * An error answer's body with the content coding its `content-encoding` names undone (up to MAX_CONTENT_CODINGS, last
 * applied first undone), for its message: read as it came, its compressed bytes were relayed to the client as the
 * message. null for a coding svc does not decode or too many of them, the body released (the status alone then
 * classifies the answer). A 2xx answer is never decoded (`encodedAnswerFailure`): svc asks for none, and an error's
 * message is all that is worth the work. The caller's bound counts decoded bytes, so a small body inflating to
 * gigabytes is cut as a large one is; bytes that do not decode fail the read as a broken body does.
 */
export function decodedErrorBody(body: Body, contentEncoding: string | undefined): Readable | null {
  const codings = (contentEncoding ?? '')
    .split(',')
    .map((coding) => coding.trim().toLowerCase())
    .filter((coding) => coding !== '' && coding !== 'identity');
  if (codings.length === 0) return body;
  if (codings.length > MAX_CONTENT_CODINGS || !codings.every((coding) => DECODERS.has(coding))) {
    discardBody(body);
    return null;
  }
  const decoders = codings.reverse().map((coding) => DECODERS.get(coding)!());
  // A failure anywhere (the connection cut, bytes that do not decode) ends the last decoder with it, where the reader
  // meets it; the reader destroying the last (its bound, its deadline) ends them all, the upstream body too.
  pipeline([body, ...decoders], () => undefined);
  return decoders.at(-1)!;
}

/**
 * A whole answer body as text (UTF-8, a leading byte-order mark dropped, as undici's `body.text()` does); past
 * `maxBytes` the body is released and `tooLarge()` thrown. Read errors (a deadline, a reset) are thrown as they are,
 * for the caller to classify. Each chunk is decoded as it comes and let go, so an answer is held once as its bytes
 * arrive and once as text: kept as chunks, joined and decoded at the end, it was held three times at the end's peak
 * (the chunks, the joined bytes, the text), ~180 MB for a 60 MB answer. Past SMALL_ANSWER_BYTES the bytes are held in
 * the `budget` of the answers in progress for `call`, and the `provider`'s `busy` failure thrown when it has no room for
 * them (answered with `status`). Plain arguments, not an object or a callback: nothing made per call for it.
 */
export async function readAnswer(
  body: Body,
  maxBytes: number,
  tooLarge: () => Error,
  budget?: AnswerBudget,
  call?: CallSignal,
  provider = '',
  status = 200,
): Promise<string> {
  const decoder = new StringDecoder('utf8');
  let text = '';
  let size = 0;
  for await (const chunk of body) {
    const buf = chunk as Buffer;
    size += buf.length;
    if (size > maxBytes) {
      body.destroy();
      throw tooLarge();
    }
    // Held until the call's run is recorded (answer-budget.ts); the pipeline lets go of what the call took.
    if (call !== undefined && !countAnswerChunk(budget, call, size, buf.length)) {
      body.destroy();
      throw answerBudgetFailure(provider, size, status);
    }
    text += decoder.write(buf);
  }
  text += decoder.end();
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

/** The message of an answer past the bound. */
export function tooLargeMessage(what: string, maxBytes: number): string {
  return `${what} is larger than ${maxBytes} bytes (SVC_PROVIDER_MAX_ANSWER_BYTES)`;
}

/**
 * Close a body nobody will read, releasing its connection. undici fails a body destroyed before its end was read with
 * an AbortError event of its own (once the body has come whole, or is closed in the turn it came), which with no
 * reader there is an uncaught exception, the end of svc's process: it is taken here.
 */
export function discardBody(body: Body): void {
  if (body.destroyed) return;
  body.once('error', () => {});
  body.destroy();
}
