/**
 * A request pipelined behind an answer that closes its connection can never be answered, so it must not run: node
 * hands svc every request it parses at once, and one that came in the packet of the request before it ran while that
 * one was still being answered (a 413, a 400 of a body that is not JSON), a write or a paid upstream call whose
 * client never saw an answer. Real `svc serve`, raw sockets; what the request behind did is counted where it would
 * show (the settings, the upstream's calls).
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { before, describe, test } from 'node:test';
import { completion, sendJson, startFakeUpstream } from '../support/fake-upstream.ts';
import { ensureBundle, startServe, suiteCleanups, tempDir } from '../support/process.ts';
import { exchangeText } from '../support/raw-http.ts';

before(ensureBundle);

const LIMIT = 1024;

/** A whole request: `method path`, its headers, and a JSON body sent as given (its length declared). */
function request(method: string, path: string, body: string, headers = ''): string {
  return `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${headers}Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

const setRetention = (days: number) => request('PUT', '/api/v1/settings', JSON.stringify({ key: 'retention_days', value: days }));
const chat = (content: string) =>
  request('POST', '/v1/chat/completions', JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }] }), 'Authorization: Bearer sk-local-dev\r\n');

/** Every status line of `answer`. */
const statuses = (answer: string) => answer.match(/HTTP\/1\.1 \d{3}(?= )/g);

describe('a request pipelined in one write behind an answer that closes the connection is not run', () => {
  const t = suiteCleanups();
  let socketPath = '';
  let port = 0;
  let upstreamCalls = () => 0;

  before(async () => {
    const upstream = await startFakeUpstream(t, (_request, res) => sendJson(res, 200, completion('answered')));
    upstreamCalls = () => upstream.requests.length;
    const dataDir = tempDir(t);
    const svc = await startServe(t, dataDir, {
      CHATCOMP_API_KEY: 'sk-upstream-0000',
      CHATCOMP_BASE_URL: upstream.baseUrl,
      SVC_API_BODY_LIMIT_BYTES: String(LIMIT),
      SVC_GATEWAY_BODY_LIMIT_BYTES: String(LIMIT),
    });
    socketPath = join(dataDir, 'svc.sock');
    port = Number(new URL(svc.address).port);
  });

  /** The retention the settings hold, read on a connection of its own. */
  async function retention(): Promise<number> {
    const answer = await exchangeText(socketPath, 'GET /api/v1/settings HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n');
    return (JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) as { settings: { retention_days: number } }).settings.retention_days;
  }

  test('behind a 413: a settings write on the local socket, a chat completion on TCP', async () => {
    const tooLarge = (path: string, headers = '') => request('PUT', path, ' '.repeat(LIMIT + 1), headers);
    const write = await exchangeText(socketPath, tooLarge('/api/v1/settings') + setRetention(7));
    const call = await exchangeText(port, tooLarge('/v1/chat/completions', 'Authorization: Bearer sk-local-dev\r\n').replace('PUT', 'POST') + chat('behind'));
    assert.deepEqual([statuses(write), await retention(), statuses(call), upstreamCalls()], [['HTTP/1.1 413'], 30, ['HTTP/1.1 413'], 0]);
  });

  test('behind a 400 of a body that is not JSON', async () => {
    const write = await exchangeText(socketPath, request('PUT', '/api/v1/settings', '{"key":') + setRetention(8));
    const call = await exchangeText(port, request('POST', '/v1/chat/completions', '{"model":', 'Authorization: Bearer sk-local-dev\r\n') + chat('behind'));
    assert.deepEqual([statuses(write), await retention(), statuses(call), upstreamCalls()], [['HTTP/1.1 400'], 30, ['HTTP/1.1 400'], 0]);
  });

  test('behind a 413, on a connection node reads through its data events (after a request asking to upgrade)', async () => {
    // Read so (src/http/upgrade.ts), node parses a whole packet at once: the requests behind the first are handed to
    // the app before the first is answered.
    const upgrade = 'GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n';
    const write = await exchangeText(socketPath, upgrade + request('PUT', '/api/v1/settings', ' '.repeat(LIMIT + 1)) + setRetention(11));
    assert.deepEqual([statuses(write), await retention()], [['HTTP/1.1 200', 'HTTP/1.1 413'], 30]);
  });

  test('behind requests kept alive, a request runs and is answered as before', async () => {
    const answer = await exchangeText(socketPath, setRetention(9) + setRetention(10).replace('Host: 127.0.0.1\r\n', 'Host: 127.0.0.1\r\nConnection: close\r\n'));
    assert.deepEqual([statuses(answer), await retention()], [['HTTP/1.1 200', 'HTTP/1.1 200'], 10]);
    const callsBefore = upstreamCalls();
    const calls = await exchangeText(port, chat('first') + chat('second').replace('Host: 127.0.0.1\r\n', 'Host: 127.0.0.1\r\nConnection: close\r\n'));
    assert.deepEqual([statuses(calls), upstreamCalls() - callsBefore], [['HTTP/1.1 200', 'HTTP/1.1 200'], 2]);
  });
});
