/**
 * The live messages-compatible provider over undici: `POST {MESSAGES_BASE_URL}/v1/messages`, buffered and SSE. The
 * client's body goes upstream untouched; the version and beta values go under the provider's real header names
 * (`anthropic-version`, default 2023-06-01, and `anthropic-beta`), the key as `x-api-key`. Timeouts and failure
 * classification are those of the chat-completions provider. It carries the messages wire only.
 */
import { request, type Dispatcher } from 'undici';
import { contentType, DEFAULT_PROVIDER_TIMEOUTS, isObject, type ProviderTimeouts } from './chat-completions.ts';
import { DEFAULT_MAX_ANSWER_BYTES, readAnswer, tooLargeMessage } from './bodies.ts';
import type { AnswerBudget } from '../answer-budget.ts';
import { deadlineSignal } from './deadline.ts';
import { undiciSignal, type CallSignal } from '../call-signal.ts';
import { classifyThrown, encodedAnswerFailure, readHttpFailure } from './errors.ts';
import { notAnEventStream, sseJson } from './sse.ts';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../../core/json-depth.ts';
import { ProviderError, type MessagesRequest, type MessagesResponse, type MessagesStreamEvent, type Provider, type ProviderCallContext, type UpstreamEvents, type Wire } from './types.ts';

export const DEFAULT_MESSAGES_VERSION = '2023-06-01';

export interface MessagesProviderOptions {
  name: string;
  apiKey: string;
  /** Base address without the version path, e.g. `https://upstream.example`. */
  baseUrl: string;
  dispatcher: Dispatcher;
  timeouts?: Partial<ProviderTimeouts>;
  /** The most bytes an answer may have (src/gateway/providers/bodies.ts); default `DEFAULT_MAX_ANSWER_BYTES`. */
  maxAnswerBytes?: number;
  /** The budget of the answers in progress, in total (src/gateway/answer-budget.ts); absent: none. */
  answerBudget?: AnswerBudget;
}

export function createMessagesProvider(options: MessagesProviderOptions): Provider {
  const { name, apiKey, dispatcher } = options;
  const timeouts = { ...DEFAULT_PROVIDER_TIMEOUTS, ...options.timeouts };
  const maxAnswerBytes = options.maxAnswerBytes ?? DEFAULT_MAX_ANSWER_BYTES;
  const { answerBudget } = options;
  const url = `${options.baseUrl.replace(/\/+$/, '').replace(/\/v1$/, '')}/v1/messages`;
  const secrets = [apiKey];
  const bad = (message: string, status?: number) => new ProviderError('bad_response', message, { provider: name, ...(status ? { upstreamStatus: status } : {}) });

  async function post(body: MessagesRequest, context: ProviderCallContext, limits: { headersTimeout: number; bodyTimeout: number }, signal: CallSignal) {
    let response: Dispatcher.ResponseData;
    try {
      response = await request(url, {
        method: 'POST',
        dispatcher,
        signal: undiciSignal(signal),
        headers: {
          'x-api-key': apiKey,
          'anthropic-version': context.messagesVersion ?? DEFAULT_MESSAGES_VERSION,
          ...(context.messagesBetas?.length ? { 'anthropic-beta': context.messagesBetas.join(',') } : {}),
          'content-type': 'application/json',
          accept: body.stream ? 'text/event-stream' : 'application/json',
          // svc decodes no answer's content coding (errors.ts `encodedAnswerFailure`), only an error's, for its message.
          'accept-encoding': 'identity',
        },
        body: JSON.stringify(body),
        headersTimeout: limits.headersTimeout,
        bodyTimeout: limits.bodyTimeout,
      });
    } catch (error) {
      throw classifyThrown(name, error, context.signal);
    }
    if (response.statusCode < 200 || response.statusCode >= 300) {
      // Within the stream headers' deadline: a stream's call waits for its answer's status no longer than that. A 529
      // (overloaded) classifies as an upstream 5xx: retryable, fail-open.
      throw await readHttpFailure(response, { provider: name, wire: 'messages', secrets, clientSignal: context.signal, errorBodyMs: timeouts.streamHeadersMs });
    }
    const encoded = encodedAnswerFailure(name, response);
    if (encoded) throw encoded;
    return response;
  }

  async function messages(body: MessagesRequest, context: ProviderCallContext): Promise<MessagesResponse> {
    const { stream: _stream, ...rest } = body;
    const deadline = deadlineSignal(context.signal, timeouts.bufferedMs);
    let parsed: unknown;
    try {
      const response = await post(rest as MessagesRequest, context, { headersTimeout: timeouts.bufferedMs, bodyTimeout: timeouts.bufferedMs }, deadline.signal);
      let text: string;
      try {
        text = await readAnswer(response.body, maxAnswerBytes, () => bad(tooLargeMessage('the upstream answer', maxAnswerBytes), response.statusCode), answerBudget, context.signal, name, response.statusCode);
      } catch (error) {
        // A body cut by the deadline is a timeout (504), by a reset a network failure, as on the other wires; the
        // answer past its bound is already a ProviderError, which classifyThrown passes through. The upstream answered
        // 2xx: it made the answer.
        throw classifyThrown(name, error, context.signal, true);
      }
      try {
        parsed = JSON.parse(text);
      } catch {
        throw bad('the upstream answer is not valid JSON', response.statusCode);
      }
      if (nestsDeeperThan(parsed, MAX_JSON_DEPTH)) throw bad(`the upstream answer nests more than ${MAX_JSON_DEPTH} levels deep`, response.statusCode);
    } finally {
      deadline.release();
    }
    // Each block typed, as the tool_use check and the replay read them (`content: [null]` was a TypeError there).
    if (!isObject(parsed) || parsed.type !== 'message' || !Array.isArray(parsed.content) || !parsed.content.every((block) => isObject(block) && typeof block.type === 'string')) {
      throw bad('the upstream answer is not a message');
    }
    return parsed as unknown as MessagesResponse;
  }

  async function streamMessages(body: MessagesRequest, context: ProviderCallContext): Promise<UpstreamEvents<MessagesStreamEvent>> {
    const response = await post({ ...body, stream: true }, context, { headersTimeout: timeouts.streamHeadersMs, bodyTimeout: timeouts.streamIdleMs }, context.signal);
    const type = contentType(response.headers);
    if (!type.includes('text/event-stream')) throw bad(await notAnEventStream(response.body, type, secrets, timeouts.streamHeadersMs), response.statusCode);
    return sseJson<MessagesStreamEvent>(response.body, {
      provider: name,
      wire: 'messages',
      clientSignal: context.signal,
      secrets,
      maxBytes: maxAnswerBytes,
      answerBudget,
      firstEventMs: timeouts.bufferedMs,
      isTerminal: (data) => data.type === 'message_stop',
      isError: (data, event) => data.type === 'error' || event === 'error',
    });
  }

  const notThisWire = async (): Promise<never> => {
    throw new ProviderError('unsupported', 'the messages provider carries only the messages wire', { provider: name, retryable: false });
  };

  return {
    name,
    kind: 'live',
    supports: (wire: Wire) => wire === 'messages',
    messages,
    streamMessages,
    chat: notThisWire,
    streamChat: notThisWire,
    embed: notThisWire,
    responses: notThisWire,
    streamResponses: notThisWire,
  };
}
