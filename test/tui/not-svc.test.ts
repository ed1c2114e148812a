/**
 * The runs TUI against a `--url` server that is not svc (or is hostile): its answers' sections may have any type,
 * hold terminal control sequences, or be huge. The screens show what they can and never end with a TypeError, and
 * nothing raw reaches the terminal. A real HTTP server answers; the screens read it through the reference client.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import test, { before, type TestContext } from 'node:test';
import { createElement } from 'react';
import { render } from 'ink-testing-library';
import { RunsApp } from '../../cli/tui/RunsApp.tsx';
import { runsSource } from '../../cli/tui/runs-source.ts';
import { SvcClient } from '../../src/client/client.ts';
import { httpTransport } from '../../src/client/transport.ts';
import { loadScaled } from '../support/load-scaled.ts';
import { ensureBundle, runSvc, tempDir } from '../support/process.ts';
import { skipWithoutTmux, terminal, until as waitFor } from '../support/tmux.ts';
import stringWidth from 'string-width';

const ESC = '\u001b]0;PWNED\u0007\u001b[2J';
/** What may not reach the terminal from the server (the frame's own styling is off: no colour in tests). */
const RAW = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;
const WAIT_MS = 10_000;

before(ensureBundle);

const LIST = {
  runs: [{ id: 'run_1', status: 'completed', route: 'live', model: 'gpt-4o-mini', costUsd: 0, priced: true, savedUsd: 0, ghostSavedUsd: 0, latencyMs: 5, createdAt: '2026-01-01T00:00:00.000Z' }],
  pagination: { limit: 50, offset: 0, total: 1, hasMore: false },
  facets: { route: { live: 1 }, status: { completed: 1 } },
};

/** An answer that is an error (HTTP 503). */
const DOWN = Symbol('down');

/** A server answering the run list with one run (or `list`) and each of the run's other paths with what `answers` says. */
async function notSvc(t: TestContext, answers: { list?: unknown; detail?: unknown; events?: unknown; integrity?: unknown; economics?: unknown }): Promise<string> {
  const server = createServer((req, res) => {
    // A base URL with a path (as --url may have) puts it before /api/v1/.
    const whole = new URL(req.url ?? '/', 'http://x').pathname;
    const path = whole.slice(Math.max(0, whole.indexOf('/api/v1/')));
    const body =
      path === '/api/v1/runs'
        ? (answers.list ?? LIST)
        : path === '/api/v1/runs/run_1'
          ? answers.detail
          : path.endsWith('/events')
            ? answers.events
            : path.endsWith('/integrity')
              ? answers.integrity
              : path.endsWith('/economics')
                ? answers.economics
                : { error: { code: 'not_found', message: 'no' } };
    if (body === DOWN) res.writeHead(503, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { code: 'unavailable', message: 'down for maintenance' } }));
    else res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** Open the TUI on `url`; every frame is checked for an error Ink shows in place of the screen. */
function openTui(t: TestContext, url: string) {
  const client = new SvcClient(httpTransport(url, null));
  t.after(() => client.close());
  const screen = render(createElement(RunsApp, { source: runsSource(client, tempDir(t)), connection: { label: 'test', live: false } }));
  t.after(() => screen.unmount());
  const until = async (check: (frame: string) => boolean, what: string): Promise<string> => {
    const deadline = Date.now() + loadScaled(WAIT_MS);
    for (;;) {
      const frame = screen.lastFrame() ?? '';
      // Ink shows an error thrown while rendering as ` ERROR <message>` and a stack, in place of the screen.
      assert.doesNotMatch(frame, /\bERROR\b|TypeError|is not a function|Cannot read properties/, frame);
      if (check(frame)) return frame;
      if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}; last frame:\n${frame}`);
      await new Promise((resolve) => setTimeout(resolve, 15));
    }
  };
  return { press: (keys: string) => screen.stdin.write(keys), until };
}

/** Open the TUI on `url`, Enter on its one run, and return the detail frame once `ok` holds. */
async function openDetail(t: TestContext, url: string, ok: (frame: string) => boolean) {
  const { press, until } = openTui(t, url);
  await until((frame) => frame.includes('run_1'), 'the list');
  press('\r');
  const frame = await until(ok, 'the detail');
  return { frame, press, until };
}

test('sections of other types than svc gives them (a string trace, an object of side effects, nulls) show as none, not a TypeError', async (t) => {
  const url = await notSvc(t, {
    detail: { run: 'x', sideEffects: {}, trace: 'x' },
    events: { events: 'x', window: null },
    integrity: { ok: 'yes', eventCount: '5', brokenAt: {}, reason: 7 },
    economics: { cost: 'x', savings: null, tokens: { actual: 'x' }, margin: { ratio: '0.5' } },
  });
  const { frame, press, until } = await openDetail(t, url, (f) => f.includes('Trace timeline') && f.includes('Economics') && !f.includes('loading'));
  assert.match(frame, /run run_1/);
  assert.match(frame, /Side effects \(0\)/);
  assert.match(frame, /no events/);
  for (const key of ['n', 'p', ']', '[']) press(key);
  await until((f) => f.includes('Trace timeline'), 'the detail after paging');
});

test('fields of other types inside the sections (numbers as strings, nulls, objects, arrays of junk) show as text or -', async (t) => {
  const url = await notSvc(t, {
    detail: {
      run: {
        id: 'run_1',
        status: 5,
        route: {},
        model: null,
        provider: [],
        error: 'boom',
        eventCount: 'x',
        latencyMs: 'slow',
        createdAt: 7,
        routeExplanation: { route: 3, rejectedAlternatives: 'x', cache: {}, fallback: 'x', policyVerdict: 'y', executionMethod: 5 },
      },
      sideEffects: [null, 'x', 4, { toolName: {}, level: '3', state: null, idempotencyKey: 9 }],
    },
    events: { events: [null, 5, 'x', { seq: '1', type: null, payload: 'x', createdAt: null }, { seq: 2, type: {}, payload: null, createdAt: 3 }], window: 'x' },
    integrity: [],
    economics: [],
  });
  const { frame, press, until } = await openDetail(t, url, (f) => f.includes('Trace timeline') && f.includes('#2'));
  assert.match(frame, /run run_1/);
  assert.match(frame, /✗ not verified/);
  assert.match(frame, /Side effects \(1\)\n  - · level 3 · - · idempotencyKey 9/);
  assert.match(frame, /events #\?-#2 of \?/);
  press('n');
  press('e');
  await until((f) => f.includes('evidence packet written to') || f.includes('export failed'), 'the export message');
});

test('a route explanation whose lists hold junk, and sections that are arrays or strings, do not end the screen', async (t) => {
  const url = await notSvc(t, {
    detail: { run: { id: 'run_1', routeExplanation: { rejectedAlternatives: [null, 1, 'x', { route: {} }], cache: [null, 'x', { cacheType: 1 }], fallback: { from: null }, policyVerdict: { decision: {} } } }, sideEffects: null },
    events: [],
    integrity: { ok: 1 },
    economics: [1],
  });
  const { frame } = await openDetail(t, url, (f) => f.includes('Trace timeline') && f.includes('rejected:'));
  assert.match(frame, /run run_1/);
});

test('terminal control sequences anywhere in the detail, and huge strings, reach the screen escaped and cut to the line', async (t) => {
  const huge = `${'x'.repeat(2_000_000)}${ESC}`;
  const url = await notSvc(t, {
    detail: {
      run: { id: 'run_1', status: ESC, route: ESC, model: huge, provider: ESC, wire: ESC, mode: ESC, error: { kind: ESC, message: huge }, eventCount: 1, routeExplanation: { route: ESC, reason: huge } },
      sideEffects: [{ toolName: ESC, level: 3, state: ESC, idempotencyKey: huge, reason: ESC }],
    },
    events: { events: [{ seq: 1, type: ESC, payload: { [ESC]: huge }, createdAt: ESC }], window: { hasMore: false, nextBefore: null } },
    integrity: { ok: false, eventCount: 1, brokenAt: 1, reason: ESC },
    economics: { reference: { source: ESC } },
  });
  const { frame } = await openDetail(t, url, (f) => f.includes('Trace timeline') && f.includes('#1'));
  assert.doesNotMatch(frame, RAW);
  assert.match(frame, /\\u001b\]0;PWNED/);
  for (const line of frame.split('\n')) assert.ok(line.length <= 100, `a line wider than the terminal: ${line.slice(0, 120)}…`);
});

test('a run list of junk items, pagination and facets shows the runs it can, in the TUI and the plain table', async (t) => {
  const huge = 'y'.repeat(2_000_000);
  const list = { runs: [null, 5, 'x', { id: 'run_1', status: huge, model: ESC }], pagination: 'x', facets: { route: 'x', status: [1] } };
  const url = await notSvc(t, { list });
  const { press, until } = openTui(t, url);
  const frame = await until((f) => f.includes('run_1') && f.includes('runs 1-1'), 'the list');
  assert.doesNotMatch(frame, RAW);
  for (const line of frame.split('\n')) assert.ok(line.length <= 100, `a line wider than the terminal: ${line.slice(0, 120)}…`);
  for (const key of ['j', 'k', 'G', 'g', 'r', 's', 'm', 'n', 'p']) press(key);
  await until((f) => f.includes('filters:'), 'the list after the keys');

  const plain = await runSvc(['runs', '--no-tui', '--url', url], { env: { SVC_DATA_DIR: tempDir(t) } });
  assert.equal(plain.code, 0, plain.stderr);
  assert.match(plain.stdout, /run_1$/m);
  assert.doesNotMatch(plain.stdout + plain.stderr, RAW);
});

test('an answer to the run list that holds no list of runs is an error saying so, not a TypeError', async (t) => {
  const url = await notSvc(t, { list: { runs: 'x' } });
  const plain = await runSvc(['runs', '--no-tui', '--url', url], { env: { SVC_DATA_DIR: tempDir(t) } });
  assert.equal(plain.code, 1);
  assert.match(plain.stderr, /^svc: the server's answer to GET \/api\/v1\/runs holds no list of runs: is it svc\?$/m);
  const { until } = openTui(t, url);
  await until((f) => f.includes('holds no list of runs: is it svc?'), 'the error on the list screen');
});

test("a run whose detail cannot be read is not said to be unrouted: the error says why", async (t) => {
  const url = await notSvc(t, { detail: DOWN, events: { events: [] }, integrity: { ok: true }, economics: {} });
  const { press, until } = openTui(t, url);
  await until((frame) => frame.includes('run_1'), 'the list');
  press('\r');
  const frame = await until((f) => /error: GET \/api\/v1\/runs\/run_1\S*: HTTP 503 unavailable: down for maintenance/.test(f), 'the error naming the call once');
  assert.doesNotMatch(frame, /has not been routed/);
});

test('the URL or data directory in the list header is shown escaped: a control sequence in SVC_BASE_URL does not retitle the terminal', { skip: skipWithoutTmux }, async (t) => {
  const url = await notSvc(t, {});
  const term = terminal(t, { columns: 120, rows: 20 });
  term.open(['runs', '--url', `${url}/${ESC}x`]);
  const screen = await waitFor(term.screen, (s) => s.includes('run_1'), 'the list', term.screen);
  assert.match(screen, /svc runs · live · http:\/\/127\.0\.0\.1:\d+\/\\u001b\]0;PWNED\\u0007/);
  assert.notEqual(term.title(), 'PWNED');
  term.keys('q');
  await waitFor(term.alive, (alive) => !alive, 'svc runs to quit', term.screen);
});

test('model names with emoji keep the columns in line: skin tones (also on ☝ ✌ ✍), ZWJ families, flags, VS16 and keycaps', async (t) => {
  // Ink lays its rows out with string-width: a cell the table measured narrower than Ink (and the terminal) does pushed
  // the rest of its row (latency, savings, time, id) one column right of the header and of the other rows.
  const models = ['☝🏽 up', '✌🏿 peace', '✍🏻 write', '🖐🏽 hand', '👍🏽 ok', '👨‍👩‍👧‍👦 family', '🇯🇵 jp', '❤️ love', '1️⃣ one', 'plain'];
  const runs = models.map((model, i) => ({ ...LIST.runs[0], id: `run_${i + 1}`, model: model.replace(' ', '-') }));
  const url = await notSvc(t, { list: { ...LIST, runs, pagination: { ...LIST.pagination, total: runs.length } } });
  const { until } = openTui(t, url);
  const frame = await until((f) => runs.every((run) => f.includes(` ${run.id}`)), 'every run');
  const lines = frame.split('\n');
  const header = lines.find((line) => line.includes('MODEL') && line.includes(' ID'))!;
  const columnOf = (line: string, text: string) => stringWidth(line.slice(0, line.indexOf(text)));
  for (const run of runs) {
    const row = lines.find((line) => line.endsWith(` ${run.id}`) || line.includes(` ${run.id} `));
    assert.ok(row !== undefined && row.includes(run.model), `${run.model} shown whole:\n${frame}`);
    assert.equal(columnOf(row, ` ${run.id}`), columnOf(header, ' ID'), `the id of the ${run.model} run starts under ID:\n${frame}`);
  }
});
