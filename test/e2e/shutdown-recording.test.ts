/**
 * A graceful stop of `svc serve` (SIGTERM) while answers are in flight loses no run: a stream still coming from its
 * upstream, a stream whose closing frame waits for a slow client (its run recorded on a turn of its own), and a
 * buffered answer still awaited are each found completed in the data file once svc has stopped.
 */
import assert from 'node:assert/strict';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import test, { before } from 'node:test';
import { contentChunk, sendJson, completion, startFakeUpstream, startSse } from '../support/fake-upstream.ts';
import { loadScaled } from '../support/load-scaled.ts';
import { ensureBundle, startServe, tempDir, type ServeProcess } from '../support/process.ts';
import { openStore } from '../../src/store/store.ts';

before(ensureBundle);

/** Resolves once `ready()` holds, polling; fails the test past a bound. */
async function until(ready: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + loadScaled(20_000);
  while (!ready()) {
    if (Date.now() > deadline) assert.fail(`not reached: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** POST `body` to svc; the response as it starts (headers), its body left to the caller. */
function post(server: ServeProcess, path: string, body: unknown): Promise<IncomingMessage> {
  const url = new URL(path, server.address);
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: 'POST', headers: { 'content-type': 'application/json' } }, resolve);
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

/** The rest of a response's body, as text. */
function readAll(res: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    res.on('data', (chunk: Buffer) => chunks.push(chunk));
    res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    res.on('error', reject);
    res.resume();
  });
}

async function statusesAfterStop(dataDir: string, runIds: string[]): Promise<Array<string | undefined>> {
  const store = openStore({ dataDir });
  try {
    return await store.read((sql) => runIds.map((id) => sql.get<{ status: string }>('SELECT status FROM runs WHERE id = ?', [id])?.status));
  } finally {
    await store.close();
  }
}

test('SIGTERM with streams and a buffered answer in flight: each run is found completed after the stop', async (t) => {
  const dataDir = tempDir(t);
  let letGo!: () => void;
  const held = new Promise<void>((resolve) => (letGo = resolve));
  const upstream = await startFakeUpstream(t, async (request, res) => {
    const body = request.body as { stream?: boolean; input?: unknown };
    if (request.url.endsWith('/responses')) {
      // A responses stream whose response.completed (~2 MB) is far more than a socket holds: its frame waits for the
      // client to read, and the run is recorded on a turn of its own meanwhile.
      const response = { id: 'resp_up', object: 'response', created_at: 1700000000, status: 'in_progress', model: 'gpt-4o-mini', output: [], usage: null };
      const item = { id: 'msg_up', type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'ok', annotations: [] }] };
      const events = [
        { type: 'response.created', sequence_number: 1, response },
        { type: 'response.output_item.added', sequence_number: 2, output_index: 0, item: { ...item, status: 'in_progress', content: [] } },
        { type: 'response.content_part.added', sequence_number: 3, item_id: 'msg_up', output_index: 0, content_index: 0, part: { type: 'output_text', text: '', annotations: [] } },
        { type: 'response.output_text.delta', sequence_number: 4, item_id: 'msg_up', output_index: 0, content_index: 0, delta: 'ok', logprobs: [] },
        { type: 'response.output_text.done', sequence_number: 5, item_id: 'msg_up', output_index: 0, content_index: 0, text: 'ok', logprobs: [] },
        { type: 'response.content_part.done', sequence_number: 6, item_id: 'msg_up', output_index: 0, content_index: 0, part: item.content[0] },
        { type: 'response.output_item.done', sequence_number: 7, output_index: 0, item },
      ];
      const completed = { type: 'response.completed', sequence_number: 8, response: { ...response, status: 'completed', output: [item], instructions: 'x'.repeat(2_000_000), usage: { input_tokens: 9, output_tokens: 1, total_tokens: 10 } } };
      startSse(res);
      for (const event of events.slice(0, 1)) res.write(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
      await held;
      for (const event of [...events.slice(1), completed]) res.write(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
      return void res.end();
    }
    if (body.stream) {
      startSse(res);
      res.write(`data: ${JSON.stringify(contentChunk('first '))}\n\n`);
      await held;
      res.write(`data: ${JSON.stringify(contentChunk('last'))}\n\n`);
      res.write(`data: ${JSON.stringify({ ...contentChunk(''), choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\n`);
      return void res.end('data: [DONE]\n\n');
    }
    await held;
    sendJson(res, 200, completion('buffered'));
  });
  const server = await startServe(t, dataDir, { CHATCOMP_API_KEY: 'sk-shutdown-recording', CHATCOMP_BASE_URL: upstream.baseUrl });

  const chat = await post(server, '/v1/chat/completions', { model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'a stream in flight' }] });
  const chatText = readAll(chat);
  // A slow client: it reads nothing of its stream until svc has stopped sending what it could.
  const responses = await post(server, '/v1/responses', { model: 'gpt-4o-mini', stream: true, input: 'a slow reader' });
  responses.pause();
  const buffered = post(server, '/v1/chat/completions', { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'a buffered answer in flight' }] });
  const left = await post(server, '/v1/chat/completions', { model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'a stream its client leaves' }] });
  await until(() => upstream.requests.length === 4, 'the four calls reached the upstream');

  server.child.kill('SIGTERM');
  await until(() => server.output().includes('SIGTERM received'), 'svc took the signal');
  left.destroy();
  await new Promise((resolve) => setTimeout(resolve, 300));
  letGo();
  const bufferedAnswer = await buffered;
  const bufferedText = await readAll(bufferedAnswer);
  assert.equal(bufferedAnswer.statusCode, 200, bufferedText);
  assert.match(await chatText, /\[DONE\]/);
  // The slow client reads its stream only now, its run's recording done by then.
  await new Promise((resolve) => setTimeout(resolve, 200));
  assert.match(await readAll(responses), /event: response\.completed/);
  assert.equal(await server.exited, 0, server.output());

  const runIds = [chat, responses, bufferedAnswer, left].map((res) => String(res.headers['x-svc-run-id']));
  assert.deepEqual(await statusesAfterStop(dataDir, runIds), ['completed', 'completed', 'completed', 'failed']);
});

test('SIGTERM, then the client of the last stream in flight leaves: its run is found recorded after the stop', async (t) => {
  const dataDir = tempDir(t);
  const upstream = await startFakeUpstream(t, async (_request, res) => {
    startSse(res);
    res.write(`data: ${JSON.stringify(contentChunk('first '))}\n\n`);
    await new Promise((resolve) => res.once('close', resolve));
  });
  const server = await startServe(t, dataDir, { CHATCOMP_API_KEY: 'sk-shutdown-recording', CHATCOMP_BASE_URL: upstream.baseUrl });
  const left = await post(server, '/v1/chat/completions', { model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'a stream its client leaves' }] });
  await new Promise((resolve) => left.once('data', resolve));
  server.child.kill('SIGTERM');
  await until(() => server.output().includes('SIGTERM received'), 'svc took the signal');
  left.destroy();
  assert.equal(await server.exited, 0, server.output());
  assert.deepEqual(await statusesAfterStop(dataDir, [String(left.headers['x-svc-run-id'])]), ['failed']);
});
