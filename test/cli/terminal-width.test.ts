/**
 * Columns are terminal columns, not UTF-16 code units: CJK text and emoji take two columns, combining marks none.
 * The width rules, the cutting helpers, the plain table (`svc runs --no-tui`, a child process against a server with
 * such model names) and the TUI's run list keep their columns in line.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import test, { before, type TestContext } from 'node:test';
import { createElement } from 'react';
import { render } from 'ink-testing-library';
import { table } from '../../cli/output.ts';
import { clip, clipStart } from '../../cli/tui/format.ts';
import { RunsApp } from '../../cli/tui/RunsApp.tsx';
import { runsSource } from '../../cli/tui/runs-source.ts';
import { SvcClient } from '../../src/client/client.ts';
import { httpTransport } from '../../src/client/transport.ts';
import { loadScaled } from '../support/load-scaled.ts';
import { ensureBundle, runSvc, tempDir } from '../support/process.ts';

before(ensureBundle);

/** Model names of four columns each, in as many code units as there are ways to write them. */
const FOUR_COLUMNS = ['gpt4', '名前', 'ｶﾀｶﾅ', '👍🏽👍🏽', '👨‍👩‍👧😀', 'cafe\u0301', '🇯🇵ab', '한국'];

test('cutting and padding count columns: a wide character is never split past the width, a grapheme never split', () => {
  assert.equal(clip('名前名前', 5), '名前…');
  assert.equal(clipStart('名前名前', 5), '…名前');
  assert.equal(clip('👍🏽👍🏽👍🏽', 3), '👍🏽…');
  assert.equal(clip('cafe\u0301s', 5), 'cafe\u0301s');
  assert.equal(clip('名前', 4), '名前');
  assert.equal(clip('abcdef', 4), 'abc…');
});

test('the plain table aligns rows holding CJK, emoji and combining marks', () => {
  const rows = FOUR_COLUMNS.map((model, i) => ({ model, id: `id${i}` }));
  const lines = table(rows, { model: 'MODEL', id: 'ID' }).trimEnd().split('\n');
  // Every model takes four columns, the header five: each id starts after five columns and two spaces.
  assert.equal(lines[0], 'MODEL  ID');
  lines.slice(1).forEach((line, i) => assert.equal(line, `${FOUR_COLUMNS[i]}${' '.repeat(3)}id${i}`));
});

/** A server listing one run per model of FOUR_COLUMNS. */
async function listing(t: TestContext): Promise<string> {
  const runs = FOUR_COLUMNS.map((model, i) => ({ id: `run_${i}`, status: 'completed', route: 'live', model, costUsd: 0, priced: true, savedUsd: 0, ghostSavedUsd: 0, latencyMs: 5, createdAt: '2026-01-01T00:00:00.000Z' }));
  const body = JSON.stringify({ runs, pagination: { limit: 50, offset: 0, total: runs.length, hasMore: false }, facets: { route: { live: runs.length }, status: { completed: runs.length } } });
  const server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(body));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** Each row with its model written as four ASCII columns: rows in line read the same up to their id. */
const asAscii = (lines: string[]) =>
  lines.map((line) => {
    const model = FOUR_COLUMNS.find((name) => line.includes(name));
    assert.ok(model, line);
    return line.replace(model, 'MMMM').replace(/run_\d/, 'run_N');
  });

test('svc runs --no-tui keeps its columns in line whatever the models are written in', async (t) => {
  const url = await listing(t);
  const result = await runSvc(['runs', '--no-tui', '--url', url], { env: { SVC_DATA_DIR: tempDir(t) } });
  assert.equal(result.code, 0, result.stderr);
  const rows = asAscii(result.stdout.trimEnd().split('\n').slice(1));
  assert.equal(rows.length, FOUR_COLUMNS.length);
  for (const row of rows) assert.equal(row, rows[0]);
});

test("the TUI's run list keeps its columns in line whatever the models are written in", async (t) => {
  const url = await listing(t);
  const client = new SvcClient(httpTransport(url, null));
  t.after(() => client.close());
  const screen = render(createElement(RunsApp, { source: runsSource(client, tempDir(t)), connection: { label: 'test', live: false } }));
  t.after(() => screen.unmount());
  const deadline = Date.now() + loadScaled(10_000);
  while (!(screen.lastFrame() ?? '').includes('run_7')) {
    if (Date.now() > deadline) assert.fail(`no list:\n${screen.lastFrame()}`);
    await new Promise((resolve) => setTimeout(resolve, 15));
  }
  const rows = asAscii((screen.lastFrame() ?? '').split('\n').filter((line) => /run_\d/.test(line)).map((line) => line.replace(/^>/, ' ')));
  assert.equal(rows.length, FOUR_COLUMNS.length);
  for (const row of rows) assert.equal(row, rows[0]);
});
