import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  classifyHttpFailure,
  classifyThrown,
  parseRetryAfter,
  providerErrorStatus,
  providerErrorToAppError,
  redactSecrets,
} from '../../../src/gateway/providers/errors.ts';
import { ProviderError } from '../../../src/gateway/providers/types.ts';

test('retry-after is read as seconds, as an HTTP date, or from retry-after-ms', () => {
  const now = Date.parse('2025-01-01T00:00:00Z');
  assert.equal(parseRetryAfter({ 'retry-after': '12' }, now), 12);
  assert.equal(parseRetryAfter({ 'retry-after': '0.2' }, now), 1, 'at least one second');
  assert.equal(parseRetryAfter({ 'retry-after': 'Wed, 01 Jan 2025 00:00:45 GMT' }, now), 45);
  assert.equal(parseRetryAfter({ 'retry-after-ms': '2500', 'retry-after': '9' }, now), 3);
  assert.equal(parseRetryAfter({ 'retry-after': 'soon' }, now), undefined);
  assert.equal(parseRetryAfter({}, now), undefined);
  assert.equal(parseRetryAfter({ 'retry-after': '999999' }, now), 3600, 'clamped');
});

test('HTTP failures classify by status, and by message for embeddings batches', () => {
  const kind = (status: number, body = '', wire: 'chat_completions' | 'embeddings' = 'chat_completions') =>
    classifyHttpFailure({ provider: 'p', wire, status, body }).kind;
  assert.equal(kind(429), 'rate_limited');
  assert.equal(kind(500), 'upstream_error');
  assert.equal(kind(529), 'upstream_error');
  assert.equal(kind(408), 'timeout');
  assert.equal(kind(400, '{"error":{"message":"bad"}}'), 'rejected');
  assert.equal(kind(413, '', 'embeddings'), 'batch_too_large');
  assert.equal(kind(413), 'rejected', 'a 413 on the chat wire is not a batch problem');
  assert.equal(kind(400, '{"error":{"message":"batch size 64 > maximum allowed batch size 32"}}', 'embeddings'), 'batch_too_large');
  assert.equal(kind(400, '{"error":{"message":"dimensions not supported"}}', 'embeddings'), 'rejected');
  const openAiTokenCap = '{"error":{"message":"Requested 453357 tokens, max 300000 tokens per request","type":"max_tokens_per_request","param":null,"code":"max_tokens_per_request"}}';
  assert.equal(kind(400, openAiTokenCap, 'embeddings'), 'batch_too_large');
  const mistralTokenCap = '{"object":"error","message":"Too many tokens overall, split into more batches.","type":"invalid_request_prompt","param":null,"code":"3210"}';
  assert.equal(kind(400, mistralTokenCap, 'embeddings'), 'batch_too_large');
  assert.equal(kind(400, mistralTokenCap), 'rejected', 'only an embeddings batch is split');
  const voyageTokenCap = JSON.stringify({ detail: "Request to model 'voyage-code-3' failed. The max allowed tokens per submitted batch is 120000. Your batch has 124417 tokens after truncation. Please lower the number of tokens in the batch." });
  assert.equal(kind(400, voyageTokenCap, 'embeddings'), 'batch_too_large');
});

test('upstream messages are relayed with keys masked', () => {
  const error = classifyHttpFailure({
    provider: 'p',
    wire: 'chat_completions',
    status: 400,
    body: JSON.stringify({ error: { message: 'key my-secret-key-value and sk-proj-abcdefghijk are wrong' } }),
    secrets: ['my-secret-key-value'],
  });
  assert.equal(error.message, 'key [redacted] and [redacted] are wrong');
  assert.equal(redactSecrets('plain text'), 'plain text');
});

test('thrown errors classify by undici code, abort and timeout signals', () => {
  const withCode = (code: string) => Object.assign(new Error(code), { code });
  assert.equal(classifyThrown('p', withCode('ECONNREFUSED')).kind, 'network');
  assert.equal(classifyThrown('p', withCode('UND_ERR_SOCKET')).kind, 'network');
  // Refused or unresolved: never reached. Reset or closed: reached, then broken (also after the upstream's 200).
  assert.equal(classifyThrown('p', withCode('ENOTFOUND')).message, 'could not reach the upstream (ENOTFOUND)');
  assert.equal(classifyThrown('p', withCode('ECONNRESET')).message, 'the connection to the upstream failed (ECONNRESET)');
  assert.equal(classifyThrown('p', withCode('UND_ERR_SOCKET')).message, 'the connection to the upstream failed (UND_ERR_SOCKET)');
  assert.equal(classifyThrown('p', withCode('UND_ERR_HEADERS_TIMEOUT')).kind, 'timeout');
  assert.equal(classifyThrown('p', withCode('UND_ERR_BODY_TIMEOUT')).kind, 'timeout');
  assert.equal(classifyThrown('p', withCode('UND_ERR_CONNECT_TIMEOUT')).kind, 'timeout');
  assert.equal(classifyThrown('p', new DOMException('t', 'TimeoutError')).kind, 'timeout');
  const aborted = new AbortController();
  aborted.abort();
  assert.equal(classifyThrown('p', withCode('UND_ERR_ABORTED'), aborted.signal).kind, 'aborted');
  assert.equal(classifyThrown('p', withCode('UND_ERR_HEADERS_TIMEOUT'), aborted.signal).kind, 'aborted', 'the client leaving wins');
  const same = new ProviderError('rejected', 'x', { provider: 'p' });
  assert.equal(classifyThrown('p', same), same);
});

test('providerErrorStatus maps each kind to the status the wires answer', () => {
  const status = (kind: ProviderError['kind'], upstreamStatus?: number) =>
    providerErrorStatus(new ProviderError(kind, 'm', { provider: 'p', ...(upstreamStatus ? { upstreamStatus } : {}), retryAfterSeconds: 4 }));
  assert.deepEqual(status('rate_limited'), { status: 429, type: 'rate_limit_error', code: 'rate_limit_exceeded', message: 'The upstream provider is rate limiting requests; retry after 4 s.', retryAfter: 4 });
  assert.equal(status('upstream_error').status, 502);
  assert.equal(status('bad_response').status, 502);
  assert.equal(status('network').status, 502);
  assert.equal(status('timeout').status, 504);
  assert.equal(status('unsupported').status, 400);
  assert.equal(status('rejected', 422).status, 422);
  assert.equal(status('rejected', 422).message, 'm');
  assert.equal(status('rejected', 401).status, 502);
  // svc's own provider account cannot pay (the messages family's billing_error): svc's failure on every wire, as 401/403.
  assert.equal(status('rejected', 402).status, 502);
  assert.equal(status('rejected', 402).code, 'upstream_error');
  const appError = providerErrorToAppError(new ProviderError('rate_limited', 'm', { provider: 'p', retryAfterSeconds: 4 }));
  assert.equal(appError.status, 429);
  assert.deepEqual(appError.headers, { 'retry-after': '4' });
  assert.equal(providerErrorToAppError(new ProviderError('rejected', 'm', { provider: 'p', upstreamStatus: 404 })).status, 404);
  assert.equal(providerErrorToAppError(new ProviderError('timeout', 'm', { provider: 'p' })).code, 'upstream_timeout');
});

test("an upstream 4xx's error.details is masked string by string: a secret holding a character JSON escapes is masked there too, in names and nested values", () => {
  const secret = 'key"with\\quote-0123456789';
  const body = JSON.stringify({ error: { message: 'nope', details: { error_code: 'x', quoted: `key ${secret}`, nested: [{ [secret]: secret }] } } });
  const error = classifyHttpFailure({ provider: 'p', wire: 'messages', status: 404, body, secrets: [secret] });
  assert.deepEqual(error.upstreamDetails, { error_code: 'x', quoted: 'key [redacted]', nested: [{ '[redacted]': '[redacted]' }] });
  assert.ok(!JSON.stringify(error.upstreamDetails).includes('0123456789'));
});
