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
import { ensureBundle, startServe, tempDir, type ServeProcess } from '../support/process.ts';

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

/** A run as a start of svc finds it over its API: the status of GET /api/v1/runs/{id}, and the run when it is 200. */
interface FoundRun {
  status: number;
  run: { status: string; route: string } | null;
}

/**
 * svc processes on one data directory, each killed the moment an answer arrives. The next start is both where the
 * killed process's run must be found and a fresh process for the next answer (its store opened anew, its code not yet
 * compiled): n answers take n + 1 starts, not 2n.
 */
function killedOnAnswers(t: TestContext) {
  const dataDir = tempDir(t);
  let killedRunId: string | null = null;

  /** Start svc with `env`, and read the run of the answer its predecessor was killed at. */
  async function start(env: Record<string, string>): Promise<{ svc: ServeProcess; previous: FoundRun | null }> {
    const svc = await startServe(t, dataDir, env);
    if (killedRunId === null) return { svc, previous: null };
    const found = await fetch(`${svc.address}/api/v1/runs/${killedRunId}`);
    return { svc, previous: { status: found.status, run: found.status === 200 ? ((await found.json()) as any).run : null } };
  }

  return {
    /**
     * Start svc with `env`, send `first` (not killed), then `last`, killing svc the moment it is answered: the
     * answer's status, and the run of the previous answer as this start found it (null for the first).
     */
    async next(env: Record<string, string>, first: string | null, last: string, wire = chatWire) {
      const { svc, previous } = await start(env);
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
      killedRunId = answered.runId;
      return { status: answered.status, previous };
    },
    /** The run of the last answer, as one more start finds it. */
    async last(): Promise<FoundRun> {
      return (await start({})).previous!;
    },
  };
}

test('while fresh, an answer waits for its run\'s commit: a live answer, a stream\'s end, a cache hit and a failure survive a kill at their arrival', async (t) => {
  await ensureBundle();
  const upstream = await startFakeUpstream(t, (req, res) => {
    const content = (req.body as { messages: Array<{ content: string }> }).messages[0]!.content;
    if (content.startsWith('fail')) return sendJson(res, 500, { error: { message: 'upstream broke', type: 'server_error' } });
    sendJson(res, 200, { id: 'c', object: 'chat.completion', created: 1, model: 'gpt-4o-mini', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } });
  });
  const live = { CHATCOMP_API_KEY: 'sk-upstream', CHATCOMP_BASE_URL: upstream.baseUrl };
  const repeated = chatBody('asked twice');

  const answers: Array<{ what: string; env: Record<string, string>; first?: string; body: string; wire?: Wire; answered?: number; run: string; route?: string }> = [
    { what: 'a live answer', env: live, body: chatBody('a live answer'), answered: 200, run: 'completed' },
    { what: 'a failure', env: live, body: chatBody('fail, please'), answered: 502, run: 'failed' },
    // The mock provider streams; the stream's [DONE] is its answer's end.
    { what: 'a stream', env: {}, body: chatBody('a streamed answer', true), run: 'completed' },
    // A stream failing midway: its error event waits for the commit of the run's failure.
    {
      what: 'a stream failing midway',
      env: {},
      body: JSON.stringify({ model: 'gpt-4o-mini-mock-malformed', stream: true, messages: [{ role: 'user', content: 'a stream that breaks' }] }),
      wire: { path: '/v1/chat/completions', streamEnd: '"error"' },
      run: 'failed',
    },
    // The other wires' streams say so with an event, which waits as chat's [DONE] does.
    { what: messagesWire.path, env: {}, body: messagesBody('a streamed message'), wire: messagesWire, run: 'completed' },
    { what: responsesWire.path, env: {}, body: responsesBody('a streamed response'), wire: responsesWire, run: 'completed' },
    { what: 'a cache hit', env: {}, first: repeated, body: repeated, run: 'completed', route: 'exact_cache' },
  ];
  const assertFound = (answer: (typeof answers)[number], found: FoundRun) => {
    assert.equal(found.status, 200, `${answer.what}: its run was not found after the kill`);
    assert.equal(found.run!.status, answer.run, answer.what);
    if (answer.route) assert.equal(found.run!.route, answer.route, answer.what);
  };

  const kills = killedOnAnswers(t);
  for (const [index, answer] of answers.entries()) {
    const { status, previous } = await kills.next(answer.env, answer.first ?? null, answer.body, answer.wire);
    if (answer.answered !== undefined) assert.equal(status, answer.answered, answer.what);
    if (index > 0) assertFound(answers[index - 1]!, previous!);
  }
  assertFound(answers.at(-1)!, await kills.last());
});
