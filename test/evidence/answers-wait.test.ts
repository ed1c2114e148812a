/**
 * A fresh process cannot keep the ledger's window (a run committed within 20 ms after its answer): its event loop
 * stalls while V8 compiles svc's code. So while the store is fresh (or its windows run late), an answer waits for its
 * run's commit (Store.answersWaitForCommit). Checked from outside: svc is killed the moment an answer arrives, and the
 * next start must find the run, for each kind of answer.
 */
import assert from 'node:assert/strict';
import { request } from 'node:http';
import test, { type TestContext } from 'node:test';
import { sendJson, startFakeUpstream } from '../support/fake-upstream.ts';
import { ensureBundle, startServe, tempDir } from '../support/process.ts';

const chatBody = (content: string, stream = false) => JSON.stringify({ model: 'gpt-4o-mini', stream, messages: [{ role: 'user', content }] });

const messagesBody = (content: string) => JSON.stringify({ model: 'claude-sonnet-4', stream: true, max_tokens: 50, messages: [{ role: 'user', content }] });
const responsesBody = (content: string) => JSON.stringify({ model: 'gpt-4o-mini', stream: true, input: content });

/** What a request is sent to, and what in its stream tells the client the answer is complete. */
interface Wire {
  path: string;
  streamEnd: string;
}
const chatWire: Wire = { path: '/v1/chat/completions', streamEnd: 'data: [DONE]' };
const messagesWire: Wire = { path: '/v1/messages', streamEnd: 'event: message_stop' };
const responsesWire: Wire = { path: '/v1/responses', streamEnd: 'event: response.completed' };

/**
 * POST a body; `onAnswer` runs (synchronously, so it may kill svc before anything else happens) as soon as the
 * answer is there: a buffered answer's headers (they go out with its body), or the event of a stream that says it is
 * complete (chat's `[DONE]`, messages' `message_stop`, responses' `response.completed`).
 */
function ask(address: string, body: string, onAnswer: (runId: string, status: number) => void, wire = chatWire): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = request(`${address}${wire.path}`, { method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
      const runId = String(res.headers['x-svc-run-id']);
      const streamed = String(res.headers['content-type']).startsWith('text/event-stream');
      if (!streamed) onAnswer(runId, res.statusCode!);
      let text = '';
      res.on('data', (chunk: Buffer) => {
        text += chunk.toString();
        if (streamed && text.includes(wire.streamEnd)) {
          text = '';
          onAnswer(runId, res.statusCode!);
        }
      });
      res.on('end', resolve);
      res.on('error', resolve);
      res.on('close', resolve);
    });
    req.on('error', (error) => (error.message.includes('socket hang up') || 'code' in error ? resolve() : reject(error)));
    req.end(body);
  });
}

/** Start svc on a new data directory, send `first` (not killed), then `last`, killing svc the moment it is answered. */
async function killedOnAnswer(t: TestContext, env: Record<string, string>, first: string | null, last: string, wire = chatWire) {
  const dataDir = tempDir(t);
  const svc = await startServe(t, dataDir, env);
  if (first !== null) await ask(svc.address, first, () => undefined);
  const arrivals: Array<{ runId: string; status: number }> = [];
  await ask(
    svc.address,
    last,
    (runId, status) => {
      svc.child.kill('SIGKILL');
      arrivals.push({ runId, status });
    },
    wire,
  );
  await svc.exited;
  const answered = arrivals[0];
  assert.ok(answered, 'the answer arrived');
  const restarted = await startServe(t, dataDir, env);
  const found = await fetch(`${restarted.address}/api/v1/runs/${answered.runId}`);
  return { answered, found: found.status, run: found.status === 200 ? ((await found.json()) as any).run : null };
}

test('while fresh, an answer waits for its run\'s commit: a live answer, a stream\'s end, a cache hit and a failure survive a kill at their arrival', async (t) => {
  await ensureBundle();
  const upstream = await startFakeUpstream(t, (req, res) => {
    const content = (req.body as { messages: Array<{ content: string }> }).messages[0]!.content;
    if (content.startsWith('fail')) return sendJson(res, 500, { error: { message: 'upstream broke', type: 'server_error' } });
    sendJson(res, 200, { id: 'c', object: 'chat.completion', created: 1, model: 'gpt-4o-mini', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } });
  });
  const live = { CHATCOMP_API_KEY: 'sk-upstream', CHATCOMP_BASE_URL: upstream.baseUrl };

  const buffered = await killedOnAnswer(t, live, null, chatBody('a live answer'));
  assert.equal(buffered.answered.status, 200);
  assert.equal(buffered.found, 200);
  assert.equal(buffered.run.status, 'completed');

  const failed = await killedOnAnswer(t, live, null, chatBody('fail, please'));
  assert.equal(failed.answered.status, 502);
  assert.equal(failed.found, 200);
  assert.equal(failed.run.status, 'failed');

  // The mock provider streams; the stream's [DONE] is its answer's end.
  const streamed = await killedOnAnswer(t, {}, null, chatBody('a streamed answer', true));
  assert.equal(streamed.found, 200);
  assert.equal(streamed.run.status, 'completed');

  // A stream failing midway: its error event waits for the commit of the run's failure.
  const broken = JSON.stringify({ model: 'gpt-4o-mini-mock-malformed', stream: true, messages: [{ role: 'user', content: 'a stream that breaks' }] });
  const failedMidway = await killedOnAnswer(t, {}, null, broken, { path: '/v1/chat/completions', streamEnd: '"error"' });
  assert.equal(failedMidway.found, 200);
  assert.equal(failedMidway.run.status, 'failed');

  // The other wires' streams say so with an event, which waits as chat's [DONE] does.
  for (const [wire, body] of [[messagesWire, messagesBody('a streamed message')], [responsesWire, responsesBody('a streamed response')]] as const) {
    const other = await killedOnAnswer(t, {}, null, body, wire);
    assert.equal(other.found, 200, wire.path);
    assert.equal(other.run.status, 'completed', wire.path);
  }

  const repeated = chatBody('asked twice');
  const hit = await killedOnAnswer(t, {}, repeated, repeated);
  assert.equal(hit.found, 200);
  assert.equal(hit.run.status, 'completed');
  assert.equal(hit.run.route, 'exact_cache');
});
