/**
 * Server-sent events from an upstream body, parsed with eventsource-parser: each event's JSON data, with its event
 * name. The stream must end with a terminal event (`isTerminal`); a body that ends before it is a bad_response
 * (a truncated stream). An `error` event is classified as the HTTP error its code stands for. Stopping early releases
 * the upstream.
 */
import type { CallSignal } from '../call-signal.ts';
import { createParser, type EventSourceMessage, type EventSourceParser } from 'eventsource-parser';
import type { Dispatcher } from 'undici';
import { classifyErrorEvent, classifyThrown, redactSecrets, upstreamMessage } from './errors.ts';
import { ProviderError, type UpstreamEvents, type Wire } from './types.ts';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../../core/json-depth.ts';
import { discardBody, MAX_ERROR_BODY_BYTES, readLimited, tooLargeMessage } from './bodies.ts';
import { answerBudgetFailure, StreamHeld, type AnswerBudget } from '../answer-budget.ts';

/** An event type that fits on an SSE `event:` line as the name it is: 1-128 letters, digits, `_`, `.`, `-`. */
const EVENT_NAME = /^[\w.-]{1,128}$/;

/**
 * Whether an upstream's event `type` may be relayed as the frame's `event:` name (the messages and responses wires
 * do so). A line break in it would end that line and start another of the upstream's choosing: an injected
 * `message_stop` or `response.completed` that the client takes for the end.
 */
export function isEventName(type: unknown): type is string {
  return typeof type === 'string' && EVENT_NAME.test(type);
}

export interface SseOptions {
  provider: string;
  /** The wire the stream answers (its error events are classified as that wire's HTTP errors). */
  wire: Wire;
  clientSignal: CallSignal;
  secrets: ReadonlyArray<string>;
  /** The most bytes the stream may have: all of it is held until it ends (src/gateway/providers/bodies.ts). */
  maxBytes: number;
  /**
   * The budget of the answers in progress (src/gateway/answer-budget.ts) the parser's unfinished line is counted in
   * (the events' relay counts what it keeps of them); absent: none.
   */
  answerBudget?: AnswerBudget;
  /** How long the stream may send nothing but comments before its first event (`firstEventWatch`). */
  firstEventMs: number;
  /** The event that ends a complete stream (it is yielded, then the stream stops). */
  isTerminal(data: { type?: unknown }, eventName: string | undefined): boolean;
  /** Whether an event is the wire's error event. */
  isError(data: { type?: unknown }, eventName: string | undefined): boolean;
  /**
   * Mask the secrets in the upstream's own words a terminal event carries (a responses stream's `response.failed` has
   * its error message), with `redact`, as an error event's message is masked: the wire's relay records them.
   */
  redactTerminal?(data: { type?: unknown }, redact: (message: string) => string): void;
}

/**
 * A check, after each chunk of an upstream stream is parsed, that its first event came in time. SSE comments
 * (`: keep-alive`) are chunks, so they keep the idle timeout from firing; an upstream sending comments only would hold
 * the client (no headers yet: they go out with the first event) and its run for ever. A stream has as long for its
 * first event as a buffered answer has for all of it (`SVC_PROVIDER_TIMEOUT_MS`), then it is a timeout. Nothing is
 * timed once an event came, and a chunk that holds one (the usual first chunk) reads no clock. Timed by the monotonic
 * clock: with the wall clock, a clock jumping forward (NTP, a resumed VM) failed a warming-up stream as a timeout at its
 * next comment, and one stepping back gave it that much longer.
 */
export function firstEventWatch(provider: string, withinMs: number): (eventsParsed: number) => void {
  const startedAt = performance.now();
  let seen = false;
  return (eventsParsed) => {
    if (seen) return;
    if (eventsParsed > 0) {
      seen = true;
      return;
    }
    if (performance.now() - startedAt > withinMs) {
      throw new ProviderError('timeout', `the upstream stream sent no event within ${withinMs} ms (only comments)`, { provider, upstreamStatus: 200 });
    }
  };
}

/**
 * What a stream call's answer that is not an event stream said: an upstream that ignored `stream: true`, or answered an
 * error with a 200. Its body is read (bounded, within `timeoutMs`) for the run's error, its message masked of
 * `secrets`; never relayed as if it were a stream.
 */
export async function notAnEventStream(body: Dispatcher.ResponseData['body'], type: string, secrets: ReadonlyArray<string | null | undefined>, timeoutMs: number): Promise<string> {
  const text = await readLimited(body, MAX_ERROR_BODY_BYTES, timeoutMs).catch(() => '');
  const message = redactSecrets(upstreamMessage(text), secrets);
  return `expected an event stream, got ${type || 'no content type'}${message ? `: ${message}` : ''}`;
}

/**
 * The line the SSE parser holds unfinished, counted in the budget of the answers in progress (`StreamHeld`): the
 * pieces since the last event (a piece that completed one leaves at most its own tail, not counted). An upstream line
 * that never ends is bounded by the answer's own bound only, so it is counted too. One per stream reader.
 */
export class UnfinishedLine extends StreamHeld {
  private bytes = 0;

  /** After a piece of `bytes` that completed `eventsParsed` events: false when the budget refuses the line it leaves. */
  fits(eventsParsed: number, bytes: number): boolean {
    this.bytes = eventsParsed === 0 ? this.bytes + bytes : 0;
    return this.reach(this.bytes);
  }
}

const CR = 13;
const LF = 10;

/**
 * An upstream body's pieces, decoded as UTF-8 (a character split between reads joined, a leading byte-order mark
 * dropped), fed to an SSE parser. The format ends a line with CRLF, LF or a lone CR; eventsource-parser holds back a
 * CR that ends what it was fed, in case an LF follows, and at the end of the body never takes it for the line ending
 * it was. A stream whose lines end in a lone CR so had each event held until the next one's bytes came, and lost its
 * last, the terminal one: svc failed it as truncated. Here a CR that ends a piece is fed as a CRLF, and an LF that
 * starts the next piece, the rest of a CRLF split between reads, is dropped (as a browser's EventSource does).
 */
export class SseFeed {
  private readonly decoder = new TextDecoder();
  private afterCr = false;

  constructor(private readonly parser: EventSourceParser) {}

  /** Parse one piece of the body. */
  piece(bytes: Uint8Array): void {
    let text = this.decoder.decode(bytes, { stream: true });
    if (this.afterCr && text.charCodeAt(0) === LF) text = text.slice(1);
    this.afterCr = text.charCodeAt(text.length - 1) === CR;
    this.parser.feed(this.afterCr ? `${text}\n` : text);
  }

  /** The body ended: parse what is left (an event without its closing blank line is not one, and is dropped). */
  end(): void {
    this.parser.feed(this.decoder.decode());
    this.parser.reset({ consume: true });
  }
}

/**
 * `events`, read from the upstream `body`, with a `release` that closes the body whether or not they were read (unread,
 * through discardBody: undici fails a body closed unread after it came whole with an error event no reader takes).
 */
export function releasable<T>(body: Dispatcher.ResponseData['body'], events: AsyncGenerator<T>): UpstreamEvents<T> {
  return {
    [Symbol.asyncIterator]: () => events,
    release() {
      discardBody(body);
    },
  };
}

/** `sseEvents` of the upstream `body`, as a stream the pipeline can release unread. */
export function sseJson<T>(body: Dispatcher.ResponseData['body'], options: SseOptions): UpstreamEvents<T> {
  return releasable(body, sseEvents<T>(body, options));
}

async function* sseEvents<T>(body: Dispatcher.ResponseData['body'], options: SseOptions): AsyncGenerator<T> {
  const pending: EventSourceMessage[] = [];
  const feed = new SseFeed(createParser({ onEvent: (event) => pending.push(event) }));
  let finished = false;
  let received = 0;
  const line = new UnfinishedLine(options.answerBudget, options.clientSignal);
  const firstEvent = firstEventWatch(options.provider, options.firstEventMs);
  const bad = (message: string) => new ProviderError('bad_response', message, { provider: options.provider, upstreamStatus: 200 });
  // The next parsed event's data, or undefined when none is pending (or the terminal one was taken). A plain function,
  // not a generator made per stream: on Node 20 each call of such a generator costs a hidden class of its own, which
  // keeps the stream's objects alive through scavenges (docs/performance-notes.md, "Generators made per request").
  const next = (): T | undefined => {
    if (pending.length === 0 || finished) return undefined;
    const event = pending.shift()!;
    let data: { type?: unknown };
    try {
      data = JSON.parse(event.data) as { type?: unknown };
    } catch {
      throw bad('an upstream stream event is not valid JSON');
    }
    if (nestsDeeperThan(data, MAX_JSON_DEPTH)) throw bad(`an upstream stream event nests more than ${MAX_JSON_DEPTH} levels deep`);
    // `data: null` was a TypeError below, recorded as a network failure with its JavaScript message; `data: 5` reached
    // the client as an event without a type.
    if (typeof data !== 'object' || data === null || Array.isArray(data)) throw bad('an upstream stream event is not a JSON object');
    // An error event is the HTTP error its code stands for (a rate limit, an overloaded upstream, an invalid request).
    if (options.isError(data, event.event)) throw classifyErrorEvent({ provider: options.provider, wire: options.wire, data, body: event.data, secrets: options.secrets });
    if (options.isTerminal(data, event.event)) {
      finished = true;
      options.redactTerminal?.(data, (message) => redactSecrets(message, options.secrets));
    }
    return data as T;
  };
  try {
    for await (const piece of body) {
      received += (piece as Buffer).length;
      if (received > options.maxBytes) throw bad(tooLargeMessage('the upstream stream', options.maxBytes));
      feed.piece(piece as Buffer);
      if (!line.fits(pending.length, (piece as Buffer).length)) throw answerBudgetFailure(options.provider, received, 200);
      firstEvent(pending.length);
      for (let data = next(); data !== undefined; data = next()) yield data;
      if (finished) return;
    }
    feed.end();
    for (let data = next(); data !== undefined; data = next()) yield data;
    if (!finished) throw bad('the upstream stream ended before its terminal event');
  } catch (error) {
    throw classifyThrown(options.provider, error, options.clientSignal);
  } finally {
    if (!body.destroyed) body.destroy();
  }
}
