/**
 * A client that goes away before its answer (the real executable, `bin/svc serve`, and a fake upstream the test holds):
 * the upstream call is cancelled and the run recorded as aborted (test/gateway covers those in process); what svc logs
 * is checked here. Nobody is there to read an answer, and neither svc nor the upstream failed: the abort is logged at
 * `info`, not as an error claiming the upstream failed (a 502 no client saw).
 */
import assert from 'node:assert/strict';
import { before, describe, test, type TestContext } from 'node:test';
import { startFakeUpstream } from '../support/fake-upstream.ts';
import { loadScaled } from '../support/load-scaled.ts';
import { ensureBundle, startServe, tempDir, type ServeProcess } from '../support/process.ts';

before(ensureBundle);

/** svc serve, logging at `info`, with the live chat-completions provider at an upstream that never answers. */
async function serveWithSilentUpstream(t: TestContext) {
  const upstream = await startFakeUpstream(t, () => {});
  const server = await startServe(t, tempDir(t), { CHATCOMP_API_KEY: 'sk-abort-test-0000', CHATCOMP_BASE_URL: upstream.baseUrl, SVC_LOG_LEVEL: 'info' });
  return { upstream, server };
}

/** svc's JSON log lines so far. */
function logLines(server: ServeProcess): Array<{ level: number; msg: string; err?: { message?: string } }> {
  return server
    .output()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line));
}

/** Resolves once `predicate` holds, checked every 20 ms; gives up after 20 s (so a failed test does not poll on). */
async function until(predicate: () => boolean, what: string): Promise<void> {
  for (const deadline = Date.now() + loadScaled(20_000); !predicate(); ) {
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('a client that goes away while the upstream is still answering', { concurrency: true }, () => {
  for (const [wire, path, body] of [
    ['chat completions', '/v1/chat/completions', { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'never answered' }] }],
    ['chat completions, streamed', '/v1/chat/completions', { model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'never answered' }] }],
    ['embeddings', '/v1/embeddings', { model: 'text-embedding-3-small', input: 'never answered' }],
  ] as const) {
    test(`${wire}: the upstream call is cancelled and the abort logged at info, not as a failed request`, async (t) => {
      const { upstream, server } = await serveWithSilentUpstream(t);
      const client = new AbortController();
      const asked = fetch(`${server.address}${path}`, { method: 'POST', signal: client.signal, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      await until(() => upstream.requests.length === 1, 'the upstream call');
      client.abort();
      await assert.rejects(asked, { name: 'AbortError' });
      await upstream.clientClosed();

      await until(() => logLines(server).some((line) => line.msg === 'request aborted by the client'), 'the abort logged');
      const aborted = logLines(server).find((line) => line.msg === 'request aborted by the client')!;
      assert.equal(aborted.level, 30);
      assert.match(aborted.err?.message ?? '', /client went away/);
      assert.deepEqual(
        logLines(server).filter((line) => line.level >= 50),
        [],
        'nothing logged as an error',
      );
    });
  }
});
