/**
 * `svc runs` without a terminal: the plain table and `--json`, with its filters, against a running `svc serve` (local
 * socket, --url) and then in-process on the same data directory once it stopped. Each kind of run (help, a usage
 * error, the table over the socket, over --url, with no server) goes through `bin/svc` as a child process; the other
 * filters run inside the test process (runSvcInProcess: their output and exit code are what they test).
 */
import assert from 'node:assert/strict';
import test, { before } from 'node:test';
import { completion, sendJson, startFakeUpstream } from '../support/fake-upstream.ts';
import { runSvcInProcess } from '../support/in-process-cli.ts';
import { ensureBundle, runSvc, startServe, tempDir } from '../support/process.ts';

before(ensureBundle);

async function chat(address: string, content: string, model = 'gpt-4o-mini'): Promise<string> {
  const response = await fetch(`${address}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content }] }),
  });
  await response.arrayBuffer();
  const runId = response.headers.get('x-svc-run-id');
  assert.ok(runId, `no run id (HTTP ${response.status})`);
  return runId;
}

const HEADER = /^ROUTE\s+STATUS\s+MODEL\s+COST_USD\s+LATENCY_MS\s+SAVINGS_USD\s+CREATED\s+ID$/m;
const lineOf = (text: string, runId: string) => text.split('\n').find((line) => line.includes(runId)) ?? '';

test('svc runs --help lists the filters, --no-tui, --out-dir and the keys', async () => {
  const help = await runSvc(['runs', '--help']);
  assert.equal(help.code, 0);
  for (const flag of ['--route', '--status', '--model', '--since', '--limit', '--offset', '--before', '--no-tui', '--out-dir', '--json', '--data-dir', '--url']) assert.ok(help.stdout.includes(flag), flag);
  assert.match(help.stdout, /Enter opens a run/);
  assert.match(help.stdout, /q, Esc or Ctrl-C quits/, 'every quit key docs/cli.md names');
  assert.match((await runSvcInProcess(['--help'])).stdout, /\bruns\b/);
});

test('bad filters are usage errors (exit 2) before touching the data directory', async (t) => {
  const args = ['--data-dir', tempDir(t)];
  // The first as bin/svc, for its process's exit code; the rest in-process, their code and message being the same.
  for (const [index, bad] of [['--status', 'sideways'], ['--route', 'teleport'], ['--limit', '0'], ['--limit', '201'], ['--since', 'soon'], ['--offset', '-1']].entries()) {
    const result = await (index === 0 ? runSvc : runSvcInProcess)(['runs', '--no-tui', ...bad, ...args]);
    assert.equal(result.code, 2, `${bad.join(' ')}: ${result.stderr}`);
  }
  const outDir = await runSvcInProcess(['runs', '--out-dir', '/nonexistent/evidence', ...args]);
  assert.equal(outDir.code, 2);
  assert.match(outDir.stderr, /--out-dir .* is not a directory/);
  // Empty is no directory either (it used to mean the current one, as if the option were left out).
  const emptyOutDir = await runSvcInProcess(['runs', '--out-dir', '', ...args]);
  assert.equal(emptyOutDir.code, 2, emptyOutDir.stderr);
  assert.match(emptyOutDir.stderr, /--out-dir.*must not be empty/);
});

test('without a terminal svc runs prints the filtered list once, over the local socket and then in-process', async (t) => {
  const dataDir = tempDir(t);
  const server = await startServe(t, dataDir);
  const live = await chat(server.address, 'hello');
  const cached = await chat(server.address, 'hello');
  const failed = await chat(server.address, 'boom', 'mock-5xx');
  const args = ['--data-dir', dataDir];

  // stdout is a pipe here: the plain table, no --no-tui needed.
  const table = await runSvc(['runs', ...args]);
  assert.equal(table.code, 0, table.stderr);
  assert.match(table.stdout, HEADER);
  assert.match(lineOf(table.stdout, live), /^live\s+completed\s+gpt-4o-mini\s+[\d.]+\s+\d+\s+[\d.]+\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\s+run_\w+$/);
  assert.match(lineOf(table.stdout, cached), /^exact_cache\s+completed\s+gpt-4o-mini\s/);
  assert.match(lineOf(table.stdout, failed), /^live\s+failed\s+mock-5xx\s/);
  assert.ok(table.stdout.indexOf(failed) < table.stdout.indexOf(live), 'newest first');

  const onlyFailed = await runSvcInProcess(['runs', '--no-tui', '--status', 'failed', ...args]);
  assert.ok(onlyFailed.stdout.includes(failed) && !onlyFailed.stdout.includes(live));
  const onlyCache = await runSvcInProcess(['runs', '--no-tui', '--route', 'exact_cache', '--model', 'gpt-4o-mini', '--since', '1h', ...args]);
  assert.deepEqual(onlyCache.stdout.trim().split('\n').slice(1).map((line) => line.split(/\s+/).at(-1)), [cached]);
  assert.match((await runSvcInProcess(['runs', '--no-tui', '--since', '2999-01-01T00:00:00Z', ...args])).stdout, /^No runs\.$/m);

  const page = await runSvcInProcess(['runs', '--no-tui', '--limit', '1', ...args]);
  assert.equal(page.stdout.trim().split('\n').length, 2);
  assert.match(page.stderr, /showing 1-1 of 3; next page: --offset 1/);
  const second = await runSvcInProcess(['runs', '--no-tui', '--limit', '1', '--offset', '1', ...args]);
  assert.ok(second.stdout.includes(cached));

  const json = JSON.parse((await runSvcInProcess(['runs', '--json', ...args])).stdout);
  assert.deepEqual(json.runs.map((run: { id: string }) => run.id), [failed, cached, live]);
  assert.equal(json.pagination.total, 3);
  assert.deepEqual(json.facets.status, { completed: 2, failed: 1 });

  const overHttp = await runSvc(['runs', '--no-tui', '--url', server.address]);
  assert.equal(overHttp.code, 0, overHttp.stderr);
  assert.ok(overHttp.stdout.includes(failed) && overHttp.stdout.includes(live), 'the same list over --url');

  // The server stops: the same command reads the data directory in-process.
  server.child.kill('SIGTERM');
  assert.equal(await server.exited, 0);
  const offline = await runSvc(['runs', '--no-tui', ...args]);
  assert.equal(offline.code, 0, offline.stderr);
  for (const runId of [live, cached, failed]) assert.ok(offline.stdout.includes(runId), runId);
  assert.equal(JSON.parse((await runSvcInProcess(['runs', '--json', '--status', 'completed', ...args])).stdout).runs.length, 2);
});

test('svc runs marks SDK-ingested prompts in the table, and --ingested / --no-ingested list or leave them out', async (t) => {
  const dataDir = tempDir(t);
  const server = await startServe(t, dataDir);
  const live = await chat(server.address, 'hello');
  const response = await fetch(`${server.address}/api/v1/ingest/prompt`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ source: 'langchain', prompt: 'handled elsewhere' }),
  });
  assert.equal(response.status, 201, await response.clone().text());
  const { runId: ingested } = (await response.json()) as { runId: string };
  const args = ['--data-dir', dataDir];
  const ids = (stdout: string) => stdout.trim().split('\n').slice(1).map((line) => line.split(/\s+/).at(-1));

  const table = await runSvcInProcess(['runs', '--no-tui', '--route', 'live', ...args]);
  assert.equal(table.code, 0, table.stderr);
  assert.match(lineOf(table.stdout, ingested), /^live\/ingested\s+completed\s+external\s+n\/a\s/);
  assert.match(lineOf(table.stdout, live), /^live\s+completed\s+gpt-4o-mini\s/);

  const served = await runSvcInProcess(['runs', '--no-tui', '--route', 'live', '--no-ingested', ...args]);
  assert.equal(served.code, 0, served.stderr);
  assert.deepEqual(ids(served.stdout), [live]);
  const only = JSON.parse((await runSvcInProcess(['runs', '--json', '--ingested', ...args])).stdout);
  assert.deepEqual(only.runs.map((run: { id: string; ingested: boolean }) => [run.id, run.ingested]), [[ingested, true]]);
  assert.equal(only.pagination.total, 1);
});

test('svc runs shows a cost or a saving below a dollar with every digit the API gives: never 0. for a priced call, nor one rounded up', async (t) => {
  // gpt-4o-mini: $0.15 per million prompt tokens, $0.6 per million output tokens (docs/gateway.md, "Cost").
  const upstream = await startFakeUpstream(t, (request, res) => {
    const prompt = JSON.stringify((request.body as { messages?: unknown })?.messages ?? '').includes('ten prompt tokens') ? 10 : 1;
    sendJson(res, 200, { ...completion(''), usage: { prompt_tokens: prompt, completion_tokens: 0, total_tokens: prompt } });
  });
  const dataDir = tempDir(t);
  const server = await startServe(t, dataDir, { CHATCOMP_API_KEY: 'sk-upstream', CHATCOMP_BASE_URL: upstream.baseUrl });
  const one = await chat(server.address, 'one token');
  const hit = await chat(server.address, 'one token');
  const ten = await chat(server.address, 'ten prompt tokens');

  const table = await runSvc(['runs', '--no-tui', '--url', server.address]);
  assert.equal(table.code, 0, table.stderr);
  const cells = (runId: string) => lineOf(table.stdout, runId).split(/\s+/);
  // ROUTE STATUS MODEL COST_USD LATENCY_MS SAVINGS_USD CREATED(2) ID: what the runs list says, 1.5e-7 and 1.5e-6.
  assert.deepEqual([cells(one)[3], cells(one)[5]], ['0.00000015', '0']);
  assert.deepEqual([cells(hit)[3], cells(hit)[5]], ['0', '0.00000015']);
  assert.deepEqual([cells(ten)[3], cells(ten)[5]], ['0.0000015', '0']);
});

test('svc runs --before walks the table by the cursor stderr names: runs recorded between pages repeat none, --json holds it', async (t) => {
  const dataDir = tempDir(t);
  const server = await startServe(t, dataDir);
  const args = ['--data-dir', dataDir];
  const oldest = await chat(server.address, 'one');
  const middle = await chat(server.address, 'two');
  const newest = await chat(server.address, 'three');
  const ids = (stdout: string) => stdout.trim().split('\n').slice(1).map((line) => line.split(/\s+/).at(-1));
  const nextBefore = (stderr: string) => /next page: .*--before (run_\w+)/.exec(stderr)?.[1];

  const first = await runSvcInProcess(['runs', '--no-tui', '--limit', '2', ...args]);
  assert.equal(first.code, 0, first.stderr);
  assert.deepEqual(ids(first.stdout), [newest, middle]);
  assert.match(first.stderr, /showing 1-2 of 3; next page: --offset 2 or --before run_\w+/);
  assert.equal(nextBefore(first.stderr), middle);
  // Two runs recorded between the pages: by --offset 2 the next page would list `middle` again.
  await chat(server.address, 'four');
  await chat(server.address, 'five');
  const second = await runSvcInProcess(['runs', '--no-tui', '--limit', '2', '--before', nextBefore(first.stderr)!, ...args]);
  assert.equal(second.code, 0, second.stderr);
  assert.deepEqual(ids(second.stdout), [oldest]);
  assert.equal(second.stderr, '', 'the last page names no next one');

  const json = JSON.parse((await runSvcInProcess(['runs', '--json', '--limit', '2', '--before', newest, ...args])).stdout);
  assert.deepEqual(json.runs.map((run: { id: string }) => run.id), [middle, oldest]);
  assert.equal(json.pagination.nextBefore, null);
  const walked = await runSvcInProcess(['runs', '--no-tui', '--limit', '1', '--before', newest, ...args]);
  assert.match(walked.stderr, new RegExp(`^showing 1-1 after ${newest} \\(5 in all\\); next page: --before ${middle}\\n$`));

  // Not a run id: a usage error; a run id svc does not have: the API's 400, exit 1.
  assert.equal((await runSvcInProcess(['runs', '--no-tui', '--before', 'key_x', ...args])).code, 2);
  const unknown = await runSvcInProcess(['runs', '--no-tui', '--before', 'run_nosuchrun', ...args]);
  assert.equal(unknown.code, 1);
  assert.match(unknown.stderr, /before: no such run/);
});
