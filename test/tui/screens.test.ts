/**
 * The runs TUI's screens with ink-testing-library, over a real in-memory svc (`build(t)`, the mock provider) reached
 * through the reference client: the list with its columns, facets and filters, keyboard navigation into a run's
 * detail (route explanation, economics, side effects, integrity badge), paging the trace, exporting the evidence
 * packet, live updates.
 */
import assert from 'node:assert/strict';
import { chmodSync, lstatSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test, { type TestContext } from 'node:test';
import { createElement } from 'react';
import { render } from 'ink-testing-library';
import type { FastifyInstance } from 'fastify';
import { RunsApp, type RunsAppProps } from '../../cli/tui/RunsApp.tsx';
import { runsSource } from '../../cli/tui/runs-source.ts';
import { connectionInfo } from '../../cli/tui/start-tui.tsx';
import { SvcClient } from '../../src/client/client.ts';
import { injectTransport } from '../../src/client/transport.ts';
import { build } from '../support/build.ts';
import { loadScaled } from '../support/load-scaled.ts';
import { tempDir } from '../support/process.ts';

const KEY = { up: '\u001B[A', down: '\u001B[B', enter: '\r', escape: '\u001B' };
const WAIT_MS = 10_000;

async function chat(app: FastifyInstance, content: string, model = 'gpt-4o-mini'): Promise<string> {
  const response = await app.inject({ method: 'POST', url: '/v1/chat/completions', payload: { model, messages: [{ role: 'user', content }] } });
  const runId = response.headers['x-svc-run-id'];
  assert.equal(typeof runId, 'string', response.body);
  return runId as string;
}

async function trace(app: FastifyInstance, runId: string, type: string, payload: Record<string, unknown>): Promise<void> {
  const response = await app.inject({ method: 'POST', url: '/api/v1/trace', payload: { runId, type, payload } });
  assert.equal(response.statusCode, 201, response.body);
}

/** A TUI over a fresh in-memory svc; `outDir` receives exported evidence packets. */
async function setup(t: TestContext) {
  const built = await build(t);
  const client = new SvcClient(injectTransport(built.app, {}, async () => {}));
  const outDir = tempDir(t, 'svc-tui-');
  const open = (props: Partial<RunsAppProps> = {}) => {
    const screen = render(
      createElement(RunsApp, {
        source: runsSource(client, outDir),
        connection: { label: 'test', live: false },
        ...props,
      }),
    );
    t.after(() => screen.unmount());
    /** Wait until the last frame satisfies `ok`; fail with the frame otherwise. */
    const until = async (ok: (frame: string) => boolean, what: string): Promise<string> => {
      const deadline = Date.now() + loadScaled(WAIT_MS);
      for (;;) {
        const frame = screen.lastFrame() ?? '';
        if (ok(frame)) return frame;
        if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}; last frame:\n${frame}`);
        await new Promise((resolve) => setTimeout(resolve, 15));
      }
    };
    const press = (keys: string) => screen.stdin.write(keys);
    return { screen, until, press };
  };
  return { ...built, client, outDir, open };
}

/** The row of a run in a list frame. */
const rowOf = (frame: string, runId: string) => frame.split('\n').find((line) => line.includes(runId)) ?? '';

test('the list shows route, status, model, cost, latency, savings, created time and id, with facet counts', async (t) => {
  const { app, open } = await setup(t);
  const live = await chat(app, 'hello');
  const cached = await chat(app, 'hello');
  const failed = await chat(app, 'boom', 'mock-5xx');
  const { until } = open({ connection: connectionInfo('in-process', '/data') });
  const frame = await until((f) => f.includes(failed) && f.includes(cached) && f.includes(live), 'three runs');
  for (const header of ['ROUTE', 'STATUS', 'MODEL', 'COST $', 'LAT MS', 'SAVED $', 'TIME (UTC)', 'ID']) assert.ok(frame.includes(header), header);
  assert.match(rowOf(frame, live), /live\s+completed\s+gpt-4o-mini\s+[\d.]+\s+\d+\s+[\d.]+\s+\d\d:\d\d:\d\d\s+run_/);
  assert.match(rowOf(frame, cached), /exact_cache\s+completed\s+gpt-4o-mini/);
  assert.match(rowOf(frame, failed), /live\s+failed\s+mock-5xx/);
  assert.match(frame, /route: live 2 · exact_cache 1/);
  assert.match(frame, /status: completed 2 · failed 1/);
  assert.match(frame, /filters: route=all status=all model=all since=all ingested=all · runs 1-3 of 3/);
  assert.match(frame, /live updates need svc serve/, 'the in-process notice');
  assert.match(rowOf(frame, failed), /^>/, 'the newest run is highlighted');
});

test('filters come from flags and from the keys: s and m cycle, f edits them, c clears them', async (t) => {
  const { app, open } = await setup(t);
  const ok = await chat(app, 'one');
  const failed = await chat(app, 'two', 'mock-5xx');
  const { until, press } = open({ initialFilters: { status: 'failed' } });
  let frame = await until((f) => f.includes(failed), 'the failed run');
  assert.ok(!frame.includes(ok), 'the flag filters the list');
  assert.match(frame, /filters: route=all status=failed model=all since=all ingested=all · runs 1-1 of 1/);
  assert.match(frame, /status: completed 1 · failed 1/, 'facets count every status under the other filters');

  press('s'); // status cycles among the offered values: completed, failed, then all
  frame = await until((f) => f.includes('status=all') && f.includes(ok) && f.includes(failed), 'status=all');
  press('s');
  frame = await until((f) => f.includes('status=completed') && f.includes(ok) && !f.includes(failed), 'status=completed');
  press('c');
  await until((f) => f.includes('status=all') && f.includes(failed), 'filters cleared');
  press('m');
  frame = await until((f) => /model=(gpt-4o-mini|mock-5xx)/.test(f) && f.includes('runs 1-1 of 1'), 'a model filter');

  press('c');
  await until((f) => f.includes('model=all') && f.includes(failed) && f.includes(ok), 'filters cleared again');
  press('f');
  await until((f) => f.includes('filter>'), 'the filter prompt');
  press('since=soon');
  press(KEY.enter);
  await until((f) => f.includes('since=soon: give an ISO time'), 'the prompt error');
  for (let i = 0; i < 'since=soon'.length; i++) press('\u007F');
  press('model=mock-5xx since=1h');
  await until((f) => f.includes('filter> model=mock-5xx since=1h'), 'the typed filter');
  press(KEY.enter);
  frame = await until((f) => f.includes('model=mock-5xx since=1h') && !f.includes('filter>') && !f.includes(ok), 'the applied filter');
  assert.ok(frame.includes(failed));
});

test('i cycles the ingested filter: only the SDK-ingested prompts, every run but them, then all; the key help names it', async (t) => {
  const { app, open } = await setup(t);
  const live = await chat(app, 'served');
  const response = await app.inject({ method: 'POST', url: '/api/v1/ingest/prompt', payload: { source: 'langchain', prompt: 'handled elsewhere' } });
  assert.equal(response.statusCode, 201, response.body);
  const ingested: string = JSON.parse(response.body).runId;
  const { until, press } = open();
  let frame = await until((f) => f.includes(live) && f.includes(ingested), 'both runs');
  assert.match(frame, /r\/s\/m\/i cycle route\/status\/model\/ingested/);

  press('i');
  frame = await until((f) => f.includes('ingested=true') && !f.includes(live), 'ingested=true');
  assert.match(rowOf(frame, ingested), /live\/ingested/);
  press('i');
  frame = await until((f) => f.includes('ingested=false') && !f.includes(ingested), 'ingested=false');
  assert.ok(frame.includes(live));
  press('i');
  await until((f) => f.includes('ingested=all') && f.includes(live) && f.includes(ingested), 'ingested=all');
});

test('n and p page the runs by cursor: runs recorded between page moves repeat none, and p returns to the page seen', async (t) => {
  const { app, open } = await setup(t);
  const runs: string[] = [];
  for (let i = 1; i <= 6; i++) runs.push(await chat(app, `walk ${i}`));
  const { until, press } = open({ limit: 2 });
  /** The run ids a frame lists, top to bottom. */
  const listed = (frame: string) => frame.match(/run_\w+/g) ?? [];
  const pages: string[][] = [listed(await until((f) => f.includes('runs 1-2 of 6') && listed(f).length === 2, 'page 1'))];
  assert.deepEqual(pages[0], [runs[5], runs[4]]);
  // A run recorded before each move: by offset, each next page would list the last run of the one before again.
  await chat(app, 'recorded while walking 1');
  press('n');
  pages.push(listed(await until((f) => f.includes('runs 3-4 of 7') && listed(f).length === 2, 'page 2')));
  await chat(app, 'recorded while walking 2');
  press('n');
  pages.push(listed(await until((f) => f.includes('runs 5-6 of 8') && listed(f).length === 2, 'page 3')));
  assert.deepEqual(pages, [[runs[5], runs[4]], [runs[3], runs[2]], [runs[1], runs[0]]]);
  const seen = pages.flat();
  assert.equal(new Set(seen).size, seen.length, `a run on two pages of one walk: ${pages.join(' | ')}`);
  press('n');
  await until((f) => f.includes('no older runs'), 'the end of the walk');

  await chat(app, 'recorded while walking 3');
  press('p');
  const back = await until((f) => f.includes('runs 3-4 of 9') && listed(f).length === 2, 'page 2 again');
  assert.deepEqual(listed(back), pages[1], 'p returns to the page seen before');
  press('p');
  // The first page is the newest runs, as read now: the three recorded during the walk are above the cursors.
  const first = await until((f) => f.includes('runs 1-2 of 9'), 'the first page again');
  assert.equal(listed(first).length, 2);
  assert.ok(!listed(first).some((runId) => seen.includes(runId)), 'the newest runs, recorded during the walk');
  press('p');
  await until((f) => f.includes('already on the newest runs'), 'no page before the first');
});

test('arrow keys and Enter open a run: route explanation, economics, side effects and the integrity badge; q goes back', async (t) => {
  const { app, open } = await setup(t);
  const first = await chat(app, 'first');
  await trace(app, first, 'side_effect.planned', { toolName: 'send_email', level: 3, payload: { to: 'a@example.com' }, idempotencyKey: 'mail-1' });
  const second = await chat(app, 'second');
  const { until, press } = open();
  await until((f) => rowOf(f, second).startsWith('>'), 'the newest run highlighted');
  press(KEY.down);
  await until((f) => rowOf(f, first).startsWith('>'), 'the cursor on the older run');
  press(KEY.up);
  await until((f) => rowOf(f, second).startsWith('>'), 'the cursor back up');
  press('j');
  await until((f) => rowOf(f, first).startsWith('>'), 'j moves down');
  press(KEY.enter);
  const frame = await until((f) => f.includes(`run ${first}`) && f.includes('✓ chain verified') && f.includes('send_email') && f.includes('provider cost'), 'the detail');
  assert.match(frame, /✓ chain verified \(\d+ events\)/);
  assert.match(frame, /Route explanation/);
  assert.match(frame, /route live: .*mock/);
  assert.match(frame, /rejected: /);
  assert.match(frame, /cache: exact_response lookup=miss write=stored/);
  assert.match(frame, /fallback: none/);
  assert.match(frame, /execution method: \S+/);
  assert.match(frame, /provider cost [\d.]+ · optimizer 0 · reference cost [\d.]+ \(served attempts\)/);
  assert.match(frame, /tokens actual \d+ in \/ \d+ out \(\d+\) · customer \d+ in \/ \d+ out \(\d+\)/);
  assert.match(frame, /Side effects \(1\)/);
  assert.match(frame, /send_email · level 3 · planned · idempotencyKey mail-1/);
  assert.match(frame, /side_effect\.planned/, 'the SDK trace event is on the timeline');
  press('q');
  await until((f) => f.includes('filters:') && rowOf(f, first).startsWith('>'), 'the list, on the same run');
});

test('a run with more side effects than the detail answer holds shows their total, not the window', async (t) => {
  const { app, open } = await setup(t);
  const runId = await chat(app, 'many effects');
  for (let i = 1; i <= 55; i++) await trace(app, runId, 'side_effect.planned', { toolName: `effect_${i}`, level: 2, payload: { i } });
  const { until, press } = open();
  await until((f) => f.includes(runId), 'the run');
  press(KEY.enter);
  const frame = await until((f) => f.includes(`run ${runId}`) && f.includes('effect_'), 'the detail');
  assert.match(frame, /Side effects \(55\)/);
  const shown = frame.split('\n').filter((line) => / effect_\d+ · level 2/.test(line)).length;
  assert.ok(shown > 0);
  assert.ok(frame.includes(`+${55 - shown} more (in the evidence packet)`), frame);
  // The newest, as the detail answer holds the newest: not the oldest of that window (effect_6, effect_7, ...).
  assert.ok(frame.includes('effect_55 · level 2') && frame.includes(`effect_${56 - shown} · level 2`), frame);
});

test('n and p page the trace through /events: older pages, then back to the newest', async (t) => {
  const { app, open } = await setup(t);
  const runId = await chat(app, 'tools');
  for (let i = 1; i <= 6; i++) await trace(app, runId, 'tool.called', { name: `tool_${i}`, args: { i }, sideEffectLevel: 0 });
  const { until, press } = open({ eventPageSize: 3 });
  await until((f) => f.includes(runId), 'the run');
  press(KEY.enter);
  let frame = await until((f) => /events #\d+-#\d+ of \d+ · page 1 \(newest\)/.test(f), 'the newest page');
  const total = Number(/of (\d+) · page 1/.exec(frame)![1]);
  assert.ok(total >= 9, `run events: ${total}`);
  assert.ok(frame.includes(`events #${total - 2}-#${total} of ${total}`));
  assert.ok(frame.includes('tool_6') && !frame.includes('tool_3'));
  press('n');
  frame = await until((f) => f.includes(`events #${total - 5}-#${total - 3} of ${total} · page 2`), 'page 2');
  assert.ok(frame.includes('tool_3') && !frame.includes('tool_6'));
  press(']');
  await until((f) => f.includes('page 3'), 'page 3');
  press('p');
  await until((f) => f.includes('page 2'), 'back to page 2');
  press('[');
  await until((f) => f.includes('page 1 (newest)') && f.includes('tool_6'), 'back to the newest page');
});

/**
 * Whether a frame says the packet was written to `path`: the line wraps where the terminal is narrower than the path
 * (the runner's per-file TMPDIR makes it ~70 characters), so it is compared with the frame's white space taken out.
 */
const exported = (frame: string, path: string): boolean => frame.replace(/\s+/g, '').includes(`evidencepacketwrittento${path.replace(/\s+/g, '')}`);

test('e writes the evidence packet to evidence-<runId>.json and shows the path', async (t) => {
  const { app, open, outDir } = await setup(t);
  const runId = await chat(app, 'export me');
  const { until, press } = open();
  await until((f) => f.includes(runId), 'the run');
  press(KEY.enter);
  await until((f) => f.includes('✓ chain verified'), 'the detail');
  press('e');
  const path = join(outDir, `evidence-${runId}.json`);
  await until((f) => exported(f, path), 'the export message');
  const packet = JSON.parse(readFileSync(path, 'utf8'));
  assert.equal(packet.format, 'svc.evidence-packet');
  assert.equal(packet.run.id, runId);
  assert.equal(packet.integrity.ok, true);
});

test('e replaces a file already at its path with a private one: a world-readable download or a symlink is not written through', async (t) => {
  const { app, open, outDir } = await setup(t);
  const runId = await chat(app, 'export me again');
  const path = join(outDir, `evidence-${runId}.json`);
  // The name `curl -OJ` gives the packet (its content-disposition), written with the umask's 0644.
  writeFileSync(path, '{}\n', { mode: 0o644 });
  chmodSync(path, 0o644);
  const { until, press } = open();
  await until((f) => f.includes(runId), 'the run');
  press(KEY.enter);
  await until((f) => f.includes('✓ chain verified'), 'the detail');
  press('e');
  await until((f) => exported(f, path), 'the export message');
  assert.equal(statSync(path).mode & 0o777, 0o600, 'the packet holds the run\'s prompts: private, as docs/cli.md says');
  assert.equal(JSON.parse(readFileSync(path, 'utf8')).run.id, runId);

  // A symlink at the path (another user's, in a shared --out-dir) is replaced, not followed to the file it names.
  const elsewhere = join(outDir, 'elsewhere.json');
  writeFileSync(elsewhere, 'untouched\n');
  rmSync(path);
  symlinkSync(elsewhere, path);
  // Back and in again: the message of the first export goes with the detail.
  press('q');
  await until((f) => f.includes('filters:') && !f.includes('evidence packet written'), 'the list');
  press(KEY.enter);
  await until((f) => f.includes('✓ chain verified'), 'the detail again');
  press('e');
  await until((f) => exported(f, path), 'the second export message');
  assert.equal(readFileSync(elsewhere, 'utf8'), 'untouched\n');
  assert.ok(lstatSync(path).isFile());
  assert.equal(lstatSync(path).mode & 0o777, 0o600);
  assert.deepEqual(readdirSync(outDir).sort(), ['elsewhere.json', `evidence-${runId}.json`], 'no temporary file left');
});

test('a tampered trace shows the broken integrity badge with the seq where the chain breaks', async (t) => {
  const { app, services, open } = await setup(t);
  const runId = await chat(app, 'tamper');
  await services.store.flush();
  await services.store.write((sql) => sql.run(`UPDATE run_events SET payload_json = '{"decision":"block"}' WHERE run_id = ? AND seq = 2`, [runId]));
  const { until, press } = open();
  await until((f) => f.includes(runId), 'the run');
  press(KEY.enter);
  await until((f) => f.includes('✗ broken at seq 2'), 'the broken badge');
});

test('a live view picks up new runs by itself; Esc on the detail goes back', async (t) => {
  const { app, open } = await setup(t);
  const before = await chat(app, 'before');
  const { until, press } = open({ connection: connectionInfo('socket', '/data'), pollMs: 100 });
  let frame = await until((f) => f.includes(before), 'the first run');
  assert.match(frame, /svc runs · live · \/data \(local socket\) · updated/);
  assert.ok(!frame.includes('live updates need svc serve'));
  const after = await chat(app, 'after');
  frame = await until((f) => f.includes(after), 'the new run, without a key press');
  assert.match(frame, /runs 1-2 of 2/);
  press(KEY.enter);
  await until((f) => f.includes(`run ${after}`) && f.includes('✓ chain verified'), 'the detail');
  press(KEY.escape);
  await until((f) => f.includes('filters:'), 'the list after Esc');
});

test("a live detail screen reads the run's detail again only when its trace moved, not on every refresh", async (t) => {
  const { app, client, outDir, open } = await setup(t);
  const runId = await chat(app, 'watched');
  // The detail answer carries side effects and feedback records (up to 512 KiB of each): much on a busy run.
  await trace(app, runId, 'side_effect.planned', { toolName: 'upload', level: 2, payload: { blob: 'x'.repeat(200_000) } });
  const source = runsSource(client, outDir);
  const reads = { detail: 0 };
  const counting = { ...source, detail: (id: string) => (reads.detail++, source.detail(id)) };
  const { until, press } = open({ source: counting, connection: connectionInfo('socket', '/data'), pollMs: 20 });
  await until((f) => f.includes(runId), 'the run');
  press(KEY.enter);
  await until((f) => f.includes('Side effects (1)') && f.includes('✓ chain verified'), 'the detail');
  await new Promise((resolve) => setTimeout(resolve, 400)); // some twenty refreshes of a run that does not change
  assert.equal(reads.detail, 1, 'the detail was read again although the run did not change');
  await trace(app, runId, 'side_effect.planned', { toolName: 'notify', level: 1, payload: {} });
  await until((f) => f.includes('Side effects (2)') && f.includes('notify'), 'the new side effect, picked up live');
  assert.equal(reads.detail, 2);
});

test('paging the trace reads only the events of the new page, not the run, its integrity and its economics again', async (t) => {
  const { app, client, outDir, open } = await setup(t);
  const runId = await chat(app, 'tools');
  for (let i = 1; i <= 6; i++) await trace(app, runId, 'tool.called', { name: `tool_${i}`, args: { i }, sideEffectLevel: 0 });
  const source = runsSource(client, outDir);
  const reads = { detail: 0, integrity: 0, economics: 0 };
  const counting = {
    ...source,
    detail: (id: string) => (reads.detail++, source.detail(id)),
    integrity: (id: string) => (reads.integrity++, source.integrity(id)),
    economics: (id: string) => (reads.economics++, source.economics(id)),
  };
  const { until, press } = open({ source: counting, eventPageSize: 3 });
  await until((f) => f.includes(runId), 'the run');
  press(KEY.enter);
  await until((f) => f.includes('page 1 (newest)') && f.includes('tool_6') && f.includes('✓ chain verified'), 'the newest page');
  press('n');
  await until((f) => f.includes('page 2') && f.includes('tool_3') && !f.includes('tool_6'), 'page 2');
  press('p');
  await until((f) => f.includes('page 1 (newest)') && f.includes('tool_6'), 'the newest page again');
  // On a run with 10,000 events and megabytes of side effects, each of these is a large read or a chain recomputed.
  assert.deepEqual(reads, { detail: 1, integrity: 1, economics: 1 });
});
