/**
 * `svc runs` end to end in a real terminal: the bundled executable in a detached tmux session (160x40), read with
 * `capture-pane` and driven with `send-keys`. Live against a running `svc serve`, over its local socket or `--url`
 * with an organization's admin key; in-process on a data directory with no server, where it holds the directory so
 * `svc serve` refuses to start, naming the TUI's process.
 * CI installs tmux (.ci/run); without it these tests are skipped, saying so.
 */
import assert from 'node:assert/strict';
import { execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import test, { before, describe, type TestContext } from 'node:test';
import { SvcClient } from '../../src/client/client.ts';
import { socketTransport } from '../../src/client/transport.ts';
import { ensureBundle, runSvc, startServe, suiteCleanups, tempDir, type Cleanups } from '../support/process.ts';
import { skipWithoutTmux as skip, terminal, until } from '../support/tmux.ts';

before(ensureBundle);

/** Where a test's runs go: a server of its own (no token: open dev mode's default organization), or its organization on a shared one. */
interface Gateway {
  address: string;
  token?: string;
}

const headersFor = (svc: Gateway) => ({ 'content-type': 'application/json', ...(svc.token ? { authorization: `Bearer ${svc.token}` } : {}) });

/** A chat completion through svc; its run id. `mock-5xx` models make a failed run. */
async function chat(svc: Gateway, content: string, model = 'gpt-4o-mini'): Promise<string> {
  const response = await fetch(`${svc.address}/v1/chat/completions`, {
    method: 'POST',
    headers: headersFor(svc),
    body: JSON.stringify({ model, messages: [{ role: 'user', content }] }),
  });
  await response.arrayBuffer();
  const runId = response.headers.get('x-svc-run-id');
  assert.ok(runId, `no run id (HTTP ${response.status})`);
  return runId;
}

/** Adds `count` side_effect.planned events (`<tool>_<n>`) to the run's trace: a trace longer than one page of the detail. */
async function planSideEffects(svc: Gateway, runId: string, count: number, { tool = 'tool', level = 1 } = {}): Promise<void> {
  for (let i = 1; i <= count; i++) {
    const response = await fetch(`${svc.address}/api/v1/trace`, {
      method: 'POST',
      headers: headersFor(svc),
      body: JSON.stringify({ runId, type: 'side_effect.planned', payload: { toolName: `${tool}_${i}`, level, payload: {} } }),
    });
    assert.equal(response.status, 201, await response.text());
  }
}

/** A `svc serve` shared by the tests of a suite, started at the first one's need: one owner user for their organizations. */
interface SharedServer {
  address: string;
  child: ChildProcess;
  operator: SvcClient;
  ownerEmail: string;
}

/** A shared `svc serve`, started for the first test that asks for it and stopped by the cleanups that test passed (its suite's). */
function sharedServer(): (cleanups: Cleanups) => Promise<SharedServer> {
  let server: Promise<SharedServer> | undefined;
  return (cleanups) =>
    (server ??= (async () => {
      const dataDir = tempDir(cleanups);
      const { address, child } = await startServe(cleanups, dataDir);
      const operator = new SvcClient(socketTransport(join(dataDir, 'svc.sock')));
      cleanups.after(() => operator.close());
      // An organization needs an owner: one user owns them all, created once (its password is hashed at production cost).
      const { user } = await operator.users.create({ email: 'owner@terminal.test' });
      return { address, child, operator, ownerEmail: user.email };
    })());
}

/**
 * The file's shared `svc serve`s (a start costs ~0.6 s of CPU, most of what a small test here costs besides its view):
 * one for the tests that neither stop nor stall their server nor read the local socket's header, and one for those
 * that stall it (SIGSTOP), which run one at a time (a stalled server stalls every test on it). Each test gets an
 * organization of its own there, made over the local socket, and an admin key of it that its chats and its view
 * (`--url`) use: the runs, facets and caches it sees are its own alone, as on a server of its own.
 */
const quietServer = sharedServer();
const stallableServer = sharedServer();
let organizations = 0;

async function organizationOn(server: SharedServer): Promise<Gateway & { view: string[] }> {
  const { org } = await server.operator.orgs.create({ name: `terminal test ${++organizations}`, ownerEmail: server.ownerEmail });
  const { token } = await server.operator.inOrg(org.id).keys.create({ name: 'terminal test', admin: true });
  return { address: server.address, token, view: ['--url', server.address, '--api-key', token] };
}

const ownOrganization = async (cleanups: Cleanups) => organizationOn(await quietServer(cleanups));

/**
 * An organization on the stallable server, and the means to stall it: `stall()` stops svc answering (stopped, not
 * gone: requests wait), `resume()` lets it answer again, as it does after the test in any case, before the next one.
 */
async function stallableOrganization(t: TestContext, cleanups: Cleanups) {
  const server = await stallableServer(cleanups);
  t.after(() => server.child.kill('SIGCONT'));
  return { ...(await organizationOn(server)), stall: () => server.child.kill('SIGSTOP'), resume: () => server.child.kill('SIGCONT') };
}

/** A list in a terminal over a live svc with a cache hit (route exact_cache) and a failed run, opened on `--status failed`. */
async function listOnFailedRuns(t: TestContext, cleanups: Cleanups) {
  const svc = await stallableOrganization(t, cleanups);
  // Newest first: failed, cached, live. The failed page's only route is live; the whole list's are exact_cache and live.
  const live = await chat(svc, 'asked twice');
  const cached = await chat(svc, 'asked twice');
  const failed = await chat(svc, 'boom', 'mock-5xx');
  const term = terminal(t, { columns: 160, rows: 24 });
  term.open(['runs', ...svc.view, '--status', 'failed'], { showExit: true });
  const wait = (ok: (screen: string) => boolean, what: string) => until(term.screen, ok, what, term.screen);
  await wait((s) => s.includes('status=failed') && s.includes('runs 1-1 of 1') && s.includes(failed), 'the failed run');
  const { stall, resume } = svc;
  const cursorOn = (runId: string) => (s: string) => s.split('\n').some((line) => line.startsWith('>') && line.includes(runId));
  return { term, wait, stall, resume, cursorOn, runs: { live, cached, failed } };
}

// The file's tests run a few at a time: each is mostly waiting (for svc serve to start, for the view's one-second polls,
// for tmux), a few seconds of it on a loaded machine, and under node 20's --test the timeout covers the whole file.
// Each has its own tmux server, and its own organization on a shared svc serve (ownOrganization, or
// stallableOrganization where it stalls svc) or, where it stops or restarts svc or reads the local socket, its own data
// directory and svc serve; a few, not all, so that a loaded machine still draws each screen within until()'s wait.
describe('svc runs in a terminal', { concurrency: 3 }, () => {
  const shared = suiteCleanups();

  // First, so that it has its slot from the start: its tests run one after the other beside the others.
  describe('with svc stalled (SIGSTOP), one test at a time', { concurrency: 1 }, () => {
    const stalling = suiteCleanups();

    test('n typed again while the older trace page is still coming (svc stalled) pages once more once it came, not to the same page twice', { skip }, async (t) => {
      const svc = await stallableOrganization(t, stalling);
      const runId = await chat(svc, 'a run with a long trace');
      await planSideEffects(svc, runId, 40);
      // 40 rows: twelve trace events a page, the newest page #35-#46 of the run's 46.
      const term = terminal(t, { columns: 160, rows: 40 });
      term.open(['runs', ...svc.view]);
      const wait = (ok: (screen: string) => boolean, what: string) => until(term.screen, ok, what, term.screen);
      await wait((s) => s.includes(runId), 'the run in the list');
      term.keys('Enter');
      await wait((s) => /events #35-#46 of 46 · page 1 \(newest\)/.test(s), 'the newest trace page');
      // Stalled (stopped, not gone): the reads the keys cause wait for an answer.
      svc.stall();
      term.keys('n');
      await wait((s) => s.includes('· page 2'), 'page 2 asked for');
      term.keys('n');
      svc.resume();
      // Not "page 3, read": a frame can show page 3's label over page 2's events before its read starts. Paged from page
      // 2's events, page 3 is #23-#34 again, for good.
      await wait((s) => /events #11-#22 of 46 · page 3/.test(s), 'page 3 showing the twelve events before page 2');
      term.keys('p');
      await wait((s) => /events #23-#34 of 46 · page 2/.test(s), 'page 2 again');
      term.keys('p');
      await wait((s) => /events #35-#46 of 46 · page 1 \(newest\)/.test(s), 'the newest page again');
    });

    test('q quits at once with svc stalled, from behind keys waiting for the new page: r j j q does not wait for svc to answer', { skip }, async (t) => {
      const svc = await stallableOrganization(t, stalling);
      for (const content of ['one', 'two', 'three']) await chat(svc, content);
      const term = terminal(t, { columns: 160, rows: 24 });
      term.open(['runs', ...svc.view], { showExit: true });
      await until(term.screen, (s) => s.includes('runs 1-3 of 3'), 'the list', term.screen);
      // Stalled (stopped, not gone): the page for route=live does not come, and the j keys wait for it.
      svc.stall();
      term.keys('r', 'j', 'j');
      await until(term.screen, (s) => s.includes('route=live'), 'the route filter, its page asked for', term.screen);
      term.keys('q');
      await until(term.screen, (s) => /exit=\d+/.test(s), 'svc runs to quit while svc is stalled', term.screen);
      assert.match(term.screen(), /exit=0\b/);
    });

    test('Esc on the detail goes back at once with svc stalled, from behind an n waiting for the trace page; q then quits', { skip }, async (t) => {
      const svc = await stallableOrganization(t, stalling);
      const runId = await chat(svc, 'a run');
      // More events than a page of the detail (twelve at 40 rows): n has an older page to ask for.
      await planSideEffects(svc, runId, 20);
      const term = terminal(t, { columns: 160, rows: 40 });
      term.open(['runs', ...svc.view], { showExit: true });
      const wait = (ok: (screen: string) => boolean, what: string) => until(term.screen, ok, what, term.screen);
      await wait((s) => s.includes(runId), 'the run in the list');
      term.keys('Enter');
      await wait((s) => /events #15-#26 of 26 · page 1 \(newest\)/.test(s), 'the newest trace page');
      svc.stall();
      // The first n asks for page 2, the second waits for it, and Esc waits behind them without the fix.
      term.keys('n');
      await wait((s) => s.includes('· page 2'), 'page 2 asked for');
      term.keys('n');
      term.keys('Escape');
      await wait((s) => s.includes('filters:') && !s.includes('Trace timeline'), 'the list again while svc is stalled');
      term.keys('q');
      await wait((s) => /exit=\d+/.test(s), 'svc runs to quit while svc is stalled');
      assert.match(term.screen(), /exit=0\b/);
    });

    test('r typed while the page for new filters is pending cycles the route through the routes of that page, not of the one on screen', { skip }, async (t) => {
      const { term, wait, stall, resume } = await listOnFailedRuns(t, stalling);
      stall();
      // One send-keys: the view reads them as one chunk and handles r right after the render of c, before the page for the
      // cleared filters is even asked for. The page on screen (failed runs) offers live only; the whole list exact_cache first.
      term.keys('c', 'r');
      await wait((s) => s.includes('filters cleared') && s.includes('status=all'), 'the filters cleared, their page asked for');
      resume();
      const screen = await wait((s) => /filters: route=(live|exact_cache) /.test(s), 'the route filter set');
      assert.match(screen, /filters: route=exact_cache status=all /, screen);
      term.keys('q');
      await wait((s) => /exit=\d+/.test(s), 'svc runs to quit');
    });

    test('j typed while the page for new filters is pending moves on that page once it came: c j puts the cursor on its second run', { skip }, async (t) => {
      const { term, wait, stall, resume, cursorOn, runs } = await listOnFailedRuns(t, stalling);
      stall();
      // One send-keys, as for r. On the page on screen (one failed run) j has nowhere to go; on the whole list it moves to
      // the second run, the cached one.
      term.keys('c', 'j');
      await wait((s) => s.includes('filters cleared') && s.includes('status=all'), 'the filters cleared, their page asked for');
      resume();
      await wait((s) => s.includes('runs 1-3 of 3') && cursorOn(runs.cached)(s), `the whole list, the cursor on its second run (${runs.cached})`);
      term.keys('k');
      await wait(cursorOn(runs.failed), 'k moves back up');
      term.keys('q');
      await wait((s) => /exit=\d+/.test(s), 'svc runs to quit');
    });

    test('f typed while a page is pending opens the prompt at once; behind a j that waits it waits too, and the text typed after it is the prompt\'s', { skip }, async (t) => {
      const { term, wait, stall, resume } = await listOnFailedRuns(t, stalling);
      stall();
      term.keys('c');
      await wait((s) => s.includes('filters cleared') && s.includes('status=all'), 'the filters cleared, their page asked for');
      // Nothing waits: f does not read the page, so the prompt opens with svc still stalled.
      term.keys('f');
      const prompting = (s: string) => s.split('\n').some((line) => line.startsWith('filter>'));
      await wait(prompting, 'the filter prompt, svc stalled');
      term.type('status=failed');
      term.keys('Enter');
      await wait((s) => s.includes('filters: route=all status=failed ') && !prompting(s), 'status=failed applied, svc stalled');
      // j waits for the failed runs' page; f and the text after it wait behind it, none read as list keys (s, r, m, i).
      term.keys('j', 'f');
      term.type('route=live');
      term.keys('Enter');
      resume();
      await wait((s) => s.includes('filters: route=live status=failed ') && s.includes('runs 1-1 of 1') && !prompting(s), 'route=live added by the prompt');
      term.keys('q');
      await wait((s) => /exit=\d+/.test(s), 'svc runs to quit');
    });
  });

  test('svc runs in a terminal: a live list over the local socket, Enter opens the detail with its integrity badge, q goes back and quits', { skip }, async (t) => {
    const dataDir = tempDir(t);
    const server = await startServe(t, dataDir);
    const first = await chat(server, 'hello from tmux');
    const term = terminal(t);
    term.open(['runs', '--data-dir', dataDir]);
    const wait = (ok: (screen: string) => boolean, what: string) => until(term.screen, ok, what, term.screen);

    let screen = await wait((s) => s.includes(first) && s.includes('gpt-4o-mini'), 'the run in the list');
    assert.match(screen, /svc runs · live · .* \(local socket\)/);
    assert.ok(!screen.includes('live updates need svc serve'));
    const second = await chat(server, 'and another one');
    screen = await wait((s) => s.includes(second), 'a new run, picked up live');

    term.keys('Down');
    await wait((s) => s.split('\n').some((line) => line.startsWith('>') && line.includes(first)), 'the cursor on the first run');
    term.keys('Enter');
    screen = await wait((s) => s.includes(`run ${first}`) && /✓ chain verified \(\d+ events\)/.test(s), 'the detail with its integrity badge');
    for (const section of ['Route explanation', 'Economics (USD)', 'Side effects (0)', 'Trace timeline', 'run.completed']) assert.ok(screen.includes(section), section);

    term.keys('q');
    await wait((s) => s.includes('filters:') && s.includes(second), 'the list again');
    term.keys('q');
    await until(term.alive, (alive) => !alive, 'svc runs to quit', term.screen);
  });

  test('svc runs with no server browses in-process and says so; svc serve meanwhile exits 1 naming its process', { skip }, async (t) => {
    const dataDir = tempDir(t);
    // A run to browse: made by a server that is then stopped.
    const server = await startServe(t, dataDir);
    const runId = await chat(server, 'recorded before the server stopped');
    server.child.kill('SIGTERM');
    assert.equal(await server.exited, 0);

    const term = terminal(t);
    term.open(['runs', '--data-dir', dataDir]);
    const screen = await until(term.screen, (s) => s.includes(runId) && s.includes('live updates need svc serve'), 'the in-process view', term.screen);
    assert.match(screen, /data directory .* \(in-process\)/);

    const lock = JSON.parse(readFileSync(join(dataDir, 'svc.lock'), 'utf8')) as { pid: number };
    assert.equal(lock.pid, term.pid(), 'the TUI owns the data directory');
    const refused = await runSvc(['serve', '--port', '0', '--data-dir', dataDir]);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, new RegExp(`in use by process ${lock.pid}\\b`));

    term.keys('q');
    await until(term.alive, (alive) => !alive, 'svc runs to quit', term.screen);
    await until(() => existsSync(join(dataDir, 'svc.lock')), (held) => !held, 'the lock to be released', () => '');
    const restarted = await startServe(t, dataDir);
    assert.match(restarted.address, /^http:/, 'svc serve starts once the TUI quit');
  });

  test('on an 80x24 terminal the detail screen fits: its headline and integrity badge stay on screen above the trace', { skip }, async (t) => {
    const svc = await ownOrganization(shared);
    const runId = await chat(svc, 'a run to open on a small terminal');
    await planSideEffects(svc, runId, 6, { tool: 'send_email', level: 3 });
    const term = terminal(t, { columns: 80, rows: 24 });
    term.open(['runs', ...svc.view]);
    await until(term.screen, (s) => s.includes(runId.slice(-12)), 'the run in the list', term.screen);
    term.keys('Enter');
    const screen = await until(term.screen, (s) => s.includes('Trace timeline') && s.includes('send_email_6'), 'the detail', term.screen);
    const lines = screen.split('\n');
    assert.match(lines[0]!, new RegExp(`^run ${runId} · ✓ chain verified \\(\\d+ events\\)`), screen);
    for (const part of ['Route explanation', 'Economics (USD)', 'Side effects (6)', 'send_email_6 · level 3', 'e export evidence packet']) assert.ok(screen.includes(part), `${part}:\n${screen}`);
    term.keys('q');
    await until(term.screen, (s) => s.includes('filters:'), 'the list again', term.screen);
  });

  test('on an 80-column terminal the list keeps the end of each run id, the part that tells runs of the same hour apart', { skip }, async (t) => {
    const svc = await ownOrganization(shared);
    const first = await chat(svc, 'one');
    const second = await chat(svc, 'two');
    // Ids start with their creation time: runs a moment apart share most of their first dozen characters (all of them
    // unless a digit rolled over between the two), so a list that showed their starts would show the same text twice.
    assert.equal(first.slice(0, 9), second.slice(0, 9));
    const term = terminal(t, { columns: 80, rows: 24 });
    term.open(['runs', ...svc.view]);
    const screen = await until(term.screen, (s) => s.includes('runs 1-2 of 2') && s.includes('gpt-4o-mini'), 'the list', term.screen);
    for (const runId of [first, second]) {
      const row = screen.split('\n').find((line) => line.includes('gpt-4o-mini') && line.includes(runId.slice(-12)));
      assert.ok(row, `no row ends with ${runId}'s last 12 characters:\n${screen}`);
      assert.ok(row.length <= 80, row);
    }
    term.keys('q');
    await until(term.alive, (alive) => !alive, 'svc runs to quit', term.screen);
  });

  test('on a 40-column terminal the list header and the detail headline wrap as text, not as columns that cut into each other', { skip }, async (t) => {
    const dataDir = tempDir(t);
    const server = await startServe(t, dataDir);
    const runId = await chat(server, 'narrow');
    const term = terminal(t, { columns: 40, rows: 30 });
    term.open(['runs', '--data-dir', dataDir]);
    /** The screen as running text: a line wrapped at a space reads the same as unwrapped. */
    const text = () => term.screen().split('\n').map((line) => line.trim()).join(' ');
    await until(text, (s) => s.includes('runs 1-1 of 1'), 'the list', term.screen);
    await until(text, (s) => /svc runs · live · \S+ \(local socket\) · updated \d\d:\d\d:\d\d/.test(s), 'the list header, whole', term.screen);
    term.keys('Enter');
    await until(text, (s) => s.includes('Trace timeline'), 'the detail', term.screen);
    await until(text, (s) => new RegExp(`run ${runId} · ✓ chain verified \\(\\d+ events\\)`).test(s), 'the headline, whole', term.screen);
  });

  test('on a terminal too short for a screen its top stays in sight, resized or not: the list header, the run headline and its integrity badge', { skip }, async (t) => {
    const svc = await ownOrganization(shared);
    const runId = await chat(svc, 'short');
    const term = terminal(t, { columns: 60, rows: 15 });
    term.open(['runs', ...svc.view]);
    const firstLine = () => term.screen().split('\n')[0] ?? '';
    await until(term.screen, (s) => s.includes('> live  completed gpt-4o-mini'), 'the list', term.screen);
    term.keys('Enter');
    await until(term.screen, (s) => s.includes('Route explanation'), 'the detail', term.screen);
    await until(firstLine, (line) => new RegExp(`^run ${runId} · ✓ chain verified`).test(line), 'the headline on the first line', term.screen);
    term.resize(40, 8);
    await until(firstLine, (line) => line.startsWith(`run ${runId}`), 'the headline on the first line at 40x8', term.screen);
    term.keys('q');
    await until(term.screen, (s) => s.includes('filters:'), 'the list again', term.screen);
    await until(firstLine, (line) => line.startsWith('svc runs · live'), 'the list header on the first line at 40x8', term.screen);
    term.resize(120, 30);
    await until(term.screen, (s) => s.startsWith('svc runs · live') && s.includes(runId) && s.includes('↑↓/j k move'), 'the whole list at 120x30', term.screen);
    term.keys('q');
    await until(term.alive, (alive) => !alive, 'svc runs to quit', term.screen);
  });

  test('on a 40-column terminal each run row still shows the end of its id: the money and time columns give way first', { skip }, async (t) => {
    const svc = await ownOrganization(shared);
    const first = await chat(svc, 'one');
    const second = await chat(svc, 'two');
    const term = terminal(t, { columns: 40, rows: 20 });
    term.open(['runs', ...svc.view]);
    const screen = await until(term.screen, (s) => s.split('\n').filter((line) => line.includes('gpt-4o-mini')).length === 2, 'the list', term.screen);
    for (const runId of [first, second]) {
      const row = screen.split('\n').find((line) => line.includes('gpt-4o-mini') && line.includes(runId.slice(-8)));
      assert.ok(row, `no row shows the end of ${runId}:\n${screen}`);
    }
    term.keys('q');
    await until(term.alive, (alive) => !alive, 'svc runs to quit', term.screen);
  });

  test('Ctrl-C, a documented quit key, quits the view from any screen as q does: exit 0, the terminal and the data directory restored', { skip }, async (t) => {
    const dataDir = tempDir(t);
    const term = terminal(t, { columns: 100, rows: 20 });
    term.open(['runs', '--data-dir', dataDir], { showExit: true });
    await until(term.screen, (s) => s.includes('No runs recorded yet.'), 'the in-process view', term.screen);
    // In the filter prompt, where q is text: Ctrl-C still quits (a key in the TUI's raw mode, not a SIGINT).
    term.keys('f');
    await until(term.screen, (s) => /^\s*filter>/m.test(s), 'the filter prompt', term.screen);
    term.keys('C-c');
    await until(term.screen, (s) => /exit=\d+/.test(s), 'svc runs to end', term.screen);
    assert.match(term.screen(), /exit=0\b/);
    assert.equal(term.alternateScreen(), false, 'the terminal was left on the alternate screen');
    assert.equal(existsSync(join(dataDir, 'svc.lock')), false, 'the data directory is still locked');
  });

  test('svc runs ended by a signal (kill, a closed terminal) leaves the alternate screen and the data directory, exiting 128+signal', { skip }, async (t) => {
    const dataDir = tempDir(t);
    const term = terminal(t, { columns: 100, rows: 20 });
    term.open(['runs', '--data-dir', dataDir], { showExit: true });
    await until(term.screen, (s) => s.includes('No runs recorded yet.'), 'the in-process view', term.screen);
    assert.ok(term.alternateScreen());
    // The pane's process is the shell that prints exit=; svc runs is its child.
    const pid = Number(execFileSync('pgrep', ['-P', String(term.pid())], { encoding: 'utf8' }).trim().split('\n')[0]);
    process.kill(pid, 'SIGTERM');
    await until(term.screen, (s) => /exit=\d+/.test(s), 'svc runs to end', term.screen);
    assert.match(term.screen(), /exit=143/);
    assert.equal(term.alternateScreen(), false, 'the terminal was left on the alternate screen');
    assert.equal(existsSync(join(dataDir, 'svc.lock')), false, 'the data directory is still locked');
  });

  test('keys that reach the view together (a held j, fast typing, a slow link) each act: j j moves two rows, j Enter opens that run', { skip }, async (t) => {
    const svc = await ownOrganization(shared);
    const runIds: string[] = [];
    for (const content of ['one', 'two', 'three', 'four']) runIds.unshift(await chat(svc, content));
    const term = terminal(t, { columns: 120, rows: 24 });
    term.open(['runs', ...svc.view]);
    const cursorOn = (runId: string) => (s: string) => s.split('\n').some((line) => line.startsWith('>') && line.includes(runId));
    await until(term.screen, cursorOn(runIds[0]!), 'the cursor on the newest run', term.screen);
    // One send-keys: tmux writes the keys to the terminal at once, and the view reads them as one chunk.
    term.keys('j', 'j');
    await until(term.screen, cursorOn(runIds[2]!), 'the cursor two rows down', term.screen);
    term.keys('k', 'Enter');
    await until(term.screen, (s) => s.includes(`run ${runIds[1]}`) && s.includes('Trace timeline'), 'the detail of the run above', term.screen);
    term.keys('q', 'G');
    await until(term.screen, cursorOn(runIds[3]!), 'the list again, the cursor on the last run', term.screen);
    term.keys('q');
    await until(term.alive, (alive) => !alive, 'svc runs to quit', term.screen);
  });

  test('on a 40-column terminal a long model name gives way to the end of the run id too', { skip }, async (t) => {
    const svc = await ownOrganization(shared);
    const short = await chat(svc, 'short model');
    const long = await chat(svc, 'long model', 'a-very-long-model-name-for-a-fine-tuned-deployment');
    const term = terminal(t, { columns: 40, rows: 20 });
    term.open(['runs', ...svc.view]);
    const screen = await until(term.screen, (s) => s.includes('runs 1-2 of 2') && s.split('\n').filter((line) => /^[> ] live /.test(line)).length === 2, 'the list', term.screen);
    for (const runId of [short, long]) {
      const row = screen.split('\n').find((line) => /^[> ] live /.test(line) && line.includes(runId.slice(-8)));
      assert.ok(row, `no row shows the end of ${runId}:\n${screen}`);
    }
    term.keys('q');
    await until(term.alive, (alive) => !alive, 'svc runs to quit', term.screen);
  });

  test('against a server that cannot be reached the list says so and does not claim that no runs match', { skip }, async (t) => {
    // A port nothing listens on: one a listener just released.
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const { port } = probe.address() as AddressInfo;
    await new Promise((resolve) => probe.close(resolve));
    const term = terminal(t, { columns: 120, rows: 24 });
    term.open(['runs', '--url', `http://127.0.0.1:${port}`]);
    const screen = await until(term.screen, (s) => s.includes(`error: cannot reach svc at http://127.0.0.1:${port}`), 'the error', term.screen);
    assert.ok(!screen.includes('No runs match'), screen);
    term.keys('q');
    await until(term.alive, (alive) => !alive, 'svc runs to quit', term.screen);
  });

  test('the key help of each screen names every key group that works on it: g/G (Home/End) on the list, ← on the detail', { skip }, async (t) => {
    const svc = await ownOrganization(shared);
    await chat(svc, 'help');
    const term = terminal(t, { columns: 200, rows: 40 });
    term.open(['runs', ...svc.view]);
    const help = (s: string) => s.split('\n').find((line) => line.includes(' quit') || line.includes(' back to the list')) ?? '';
    let screen = await until(term.screen, (s) => s.includes('runs 1-1 of 1') && help(s) !== '', 'the list', term.screen);
    for (const keys of ['↑↓/j k', 'PgUp/PgDn', 'g/G', 'Enter', 'r/s/m/i', 'f filter', 'c clear', 'n/p', 'q quit']) assert.ok(help(screen).includes(keys), `${keys} not in: ${help(screen)}`);
    term.keys('Enter');
    screen = await until(term.screen, (s) => s.includes('Trace timeline') && help(s).includes('back to the list'), 'the detail', term.screen);
    for (const keys of ['n/]', 'p/[', 'e export', 'q/Esc/←']) assert.ok(help(screen).includes(keys), `${keys} not in: ${help(screen)}`);
    term.keys('Left');
    await until(term.screen, (s) => s.includes('runs 1-1 of 1'), 'the list again', term.screen);
    term.keys('End');
    await until(term.screen, (s) => s.split('\n').some((line) => line.startsWith('> live')), 'the cursor on the last run', term.screen);
    term.keys('q');
    await until(term.alive, (alive) => !alive, 'svc runs to quit', term.screen);
  });

  test('on an empty data directory the list says no runs are recorded yet, not that the filters match none; with a filter it says that', { skip }, async (t) => {
    const dataDir = tempDir(t);
    const term = terminal(t, { columns: 120, rows: 24 });
    term.open(['runs', '--data-dir', dataDir]);
    await until(term.screen, (s) => s.includes('runs 0 of 0') && s.includes('No runs recorded yet.'), 'the empty list', term.screen);
    term.keys('i');
    await until(term.screen, (s) => s.includes('ingested=true') && s.includes('No runs match these filters.'), 'the empty filtered list', term.screen);
    term.keys('q');
    await until(term.alive, (alive) => !alive, 'svc runs to quit', term.screen);
  });

  test('while svc is down the list header says not live with the time of the last good read, and live again once svc is back', { skip }, async (t) => {
    const dataDir = tempDir(t);
    const server = await startServe(t, dataDir);
    const runId = await chat(server, 'before the outage');
    const port = new URL(server.address).port;
    const term = terminal(t, { columns: 160, rows: 24 });
    term.open(['runs', '--url', server.address]);
    const header = () => term.screen().split('\n')[0] ?? '';
    await until(header, (line) => /^svc runs · live · \S+ · updated \d\d:\d\d:\d\d/.test(line), 'the live header', term.screen);
    await until(term.screen, (s) => s.includes(runId), 'the run in the list', term.screen);

    server.child.kill('SIGTERM');
    assert.equal(await server.exited, 0);
    await until(term.screen, (s) => s.includes(`error: cannot reach svc at ${server.address}`), 'the error', term.screen);
    const offline = header();
    assert.match(offline, /^svc runs · not live · \S+ · last updated \d\d:\d\d:\d\d/, term.screen());
    assert.ok(term.screen().includes(runId), 'the last page read stays on screen');

    await startServe(t, dataDir, { SVC_PORT: port });
    await until(header, (line) => /^svc runs · live · \S+ · updated \d\d:\d\d:\d\d/.test(line), 'the live header again', term.screen);
    await until(term.screen, (s) => !s.includes('error: cannot reach svc'), 'the error gone', term.screen);
    term.keys('q');
    await until(term.alive, (alive) => !alive, 'svc runs to quit', term.screen);
  });

  test('a run opened while svc is down says it could not be read, not that it is loading or its chain being checked; read once svc is back', { skip }, async (t) => {
    const dataDir = tempDir(t);
    const server = await startServe(t, dataDir);
    const runId = await chat(server, 'opened during the outage');
    const port = new URL(server.address).port;
    const term = terminal(t, { columns: 160, rows: 30 });
    term.open(['runs', '--url', server.address]);
    await until(term.screen, (s) => s.includes(runId), 'the run in the list', term.screen);

    server.child.kill('SIGTERM');
    assert.equal(await server.exited, 0);
    await until(term.screen, (s) => s.includes('not live'), 'the list not live', term.screen);
    term.keys('Enter');
    const screen = await until(term.screen, (s) => s.includes(`run ${runId}`) && s.includes(`error: cannot reach svc at ${server.address}`), 'the detail with the error', term.screen);
    const lines = screen.split('\n');
    assert.equal(lines[0], `run ${runId} · chain not checked`, screen);
    assert.equal(lines[1], 'the run could not be read (the error below says why)', screen);
    assert.doesNotMatch(screen, /loading|checking chain|events none/, screen);

    await startServe(t, dataDir, { SVC_PORT: port });
    await until(term.screen, (s) => /✓ chain verified \(\d+ events\)/.test(s) && !s.includes('error:'), 'the run read once svc is back', term.screen);
    term.keys('q', 'q');
    await until(term.alive, (alive) => !alive, 'svc runs to quit', term.screen);
  });

  test('keys typed right after a filter change act on the new page once it arrives: c j j puts the cursor on its third row', { skip }, async (t) => {
    const svc = await ownOrganization(shared);
    // Newest first: three completed runs above the two failed ones.
    const failed = [await chat(svc, 'f2', 'mock-5xx'), await chat(svc, 'f1', 'mock-5xx')];
    const completed: string[] = [];
    for (const content of ['c1', 'c2', 'c3']) completed.unshift(await chat(svc, content));
    const term = terminal(t, { columns: 160, rows: 24 });
    term.open(['runs', ...svc.view]);
    const rows = (s: string) => s.split('\n').filter((line) => /^[> ] live /.test(line));
    const cursorOn = (runId: string) => (s: string) => rows(s).some((line) => line.startsWith('>') && line.includes(runId));
    await until(term.screen, (s) => s.includes('runs 1-5 of 5'), 'the whole list', term.screen);
    term.keys('s');
    await until(term.screen, (s) => s.includes('status=completed'), 'status=completed', term.screen);
    term.keys('s');
    await until(term.screen, (s) => s.includes('status=failed') && s.includes('runs 1-2 of 2') && rows(s).length === 2, 'only the failed runs', term.screen);
    // One send-keys: the view reads them as one chunk, before the page for the cleared filters can have arrived.
    term.keys('c', 'j', 'j');
    // Not the first frame of the new page: it is drawn (its cursor on the first row) before the j keys that waited for it
    // act, and under load it stays on screen long enough to be read. A cursor that ends elsewhere times out here.
    await until(
      term.screen,
      (s) => s.includes('filters cleared') && s.includes('runs 1-5 of 5') && rows(s).length === 5 && cursorOn(completed[2]!)(s),
      `the whole list again, the cursor on its third run (${completed[2]})`,
      term.screen,
    );
    term.keys('q');
    await until(term.alive, (alive) => !alive, 'svc runs to quit', term.screen);
  });

  test('on a 40x10 terminal the lines that fit are drawn whole, one under the other, and the rest is cut at the bottom', { skip }, async (t) => {
    const svc = await ownOrganization(shared);
    const runId = await chat(svc, 'tiny');
    await chat(svc, 'tinier');
    await chat(svc, 'tiniest');
    const term = terminal(t, { columns: 40, rows: 10 });
    term.open(['runs', ...svc.view]);
    const lines = () => term.screen().split('\n');
    // The list: header and filters wrap to two lines or more each, then the facets, the column titles and the rows.
    let screen = await until(term.screen, (s) => s.includes('runs 1-3 of 3') && s.includes('> live'), 'the list', term.screen);
    assert.ok(lines().some((line) => line.startsWith('route: live 3')), `the facets line is not drawn whole:\n${screen}`);
    assert.ok(lines().some((line) => /^ {2}ROUTE +STATUS +MODEL +ID *$/.test(line)), `the column titles are not drawn whole:\n${screen}`);
    // The highlighted run stays on screen, also where the rows after the first do not fit.
    term.keys('j', 'j');
    screen = await until(term.screen, (s) => s.includes('runs 1-3 of 3') && s.includes(runId.slice(-5)), 'the third (oldest) run', term.screen);
    assert.ok(lines().some((line) => line.startsWith('> live') && line.includes(runId.slice(-5))), `the highlighted run is not on screen:\n${screen}`);
    term.keys('Enter');
    screen = await until(term.screen, (s) => s.includes('chain verified'), 'the detail', term.screen);
    const shown = lines();
    assert.ok(shown[0]!.startsWith(`run ${runId}`), `the headline is not on the first line:\n${screen}`);
    assert.ok(shown.includes('Route explanation'), `the route section's title is not drawn whole:\n${screen}`);
    assert.ok(shown.some((line) => line.startsWith('  route live: served by mock')), `the route is not drawn whole:\n${screen}`);
  });

  test('on a 40-column terminal a page with a cache hit (route exact_cache) still shows the end of each run id', { skip }, async (t) => {
    const svc = await ownOrganization(shared);
    // The same request twice: the second is answered from the exact cache, and its route is the widest svc has.
    const live = await chat(svc, 'asked twice');
    const cached = await chat(svc, 'asked twice');
    const term = terminal(t, { columns: 40, rows: 20 });
    term.open(['runs', ...svc.view]);
    const screen = await until(term.screen, (s) => s.includes('runs 1-2 of 2') && s.includes('exact_cache 1'), 'the list', term.screen);
    for (const runId of [live, cached]) {
      const row = screen.split('\n').find((line) => /^[> ] (live|exact_c)/.test(line) && line.includes(runId.slice(-8)));
      assert.ok(row, `no row shows the end of ${runId}:\n${screen}`);
    }
  });

  test('on a 40x14 terminal the list shows as many runs as fit under its wrapped header and filters', { skip }, async (t) => {
    const svc = await ownOrganization(shared);
    const runIds: string[] = [];
    for (const content of ['a', 'b', 'c', 'd', 'e']) runIds.push(await chat(svc, content));
    // 13 lines drawn: header and filters two each, facets, column titles, the five runs, the key help.
    const term = terminal(t, { columns: 40, rows: 14 });
    term.open(['runs', ...svc.view]);
    const screen = await until(term.screen, (s) => s.includes('runs 1-5 of 5') && s.startsWith('svc runs · live'), 'the list', term.screen);
    for (const runId of runIds) assert.ok(screen.includes(runId.slice(-8)), `${runId} is not on screen:\n${screen}`);
  });

  test('PgDn and PgUp page the list by the rows on screen: on a short terminal every run is shown once on the way down, none skipped', { skip }, async (t) => {
    const svc = await ownOrganization(shared);
    const runIds: string[] = [];
    for (let i = 1; i <= 7; i++) runIds.unshift(await chat(svc, `run ${i}`));
    // Eight lines: header, filters, facets, column titles and the key help leave two rows (seven lines drawn, see Screen).
    const term = terminal(t, { columns: 160, rows: 8 });
    term.open(['runs', ...svc.view]);
    const shownRuns = (s: string) => runIds.filter((runId) => s.split('\n').some((line) => /^[> ] live /.test(line) && line.includes(runId)));
    const cursorOn = (runId: string) => (s: string) => s.split('\n').some((line) => line.startsWith('>') && line.includes(runId));
    let screen = await until(term.screen, (s) => s.includes('runs 1-7 of 7') && cursorOn(runIds[0]!)(s), 'the list', term.screen);
    const perPage = shownRuns(screen).length;
    assert.ok(perPage >= 1 && perPage < runIds.length, `the terminal shows ${perPage} of ${runIds.length} runs:\n${screen}`);
    const pages: string[][] = [shownRuns(screen)];
    // Each PgDn puts the cursor on the first run after the page on screen, and shows the runs from it on.
    for (let top = perPage; top < runIds.length; top += perPage) {
      term.keys('PageDown');
      screen = await until(term.screen, cursorOn(runIds[top]!), `PgDn: the cursor on run ${top + 1} (${runIds[top]})`, term.screen);
      pages.push(shownRuns(screen));
    }
    assert.deepEqual(pages.flat(), runIds, `pages shown: ${JSON.stringify(pages)}`);
    // And back up, page by page, to the top.
    for (let top = (pages.length - 2) * perPage; top >= 0; top -= perPage) {
      term.keys('PageUp');
      screen = await until(term.screen, cursorOn(runIds[top]!), `PgUp: the cursor on run ${top + 1} (${runIds[top]})`, term.screen);
      assert.deepEqual(shownRuns(screen), runIds.slice(top, top + perPage), screen);
    }
    term.keys('q');
    await until(term.alive, (alive) => !alive, 'svc runs to quit', term.screen);
  });

  test('on a 5-row terminal the highlighted run and the open filter prompt stay in sight: the decorations give way to them', { skip }, async (t) => {
    const svc = await ownOrganization(shared);
    const runIds: string[] = [];
    for (let i = 1; i <= 5; i++) runIds.unshift(await chat(svc, `run ${i}`));
    const term = terminal(t, { columns: 80, rows: 5 });
    term.open(['runs', ...svc.view]);
    const wait = (ok: (screen: string) => boolean, what: string) => until(term.screen, ok, what, term.screen);
    const cursorOn = (runId: string) => (s: string) => s.split('\n').some((line) => line.startsWith('> live') && line.includes(runId.slice(-8)));
    const prompting = (s: string) => s.split('\n').some((line) => line.startsWith('filter>'));
    await wait(cursorOn(runIds[0]!), 'the first run highlighted');
    // The list window scrolls with the cursor: the fourth run comes into sight as it is highlighted.
    term.keys('j', 'j', 'j');
    await wait(cursorOn(runIds[3]!), 'the fourth run highlighted');
    term.keys('f');
    await wait((s) => prompting(s) && cursorOn(runIds[3]!)(s), 'the filter prompt under the highlighted run');
    term.type('model=');
    await wait((s) => s.includes('filter> model=') && cursorOn(runIds[3]!)(s), 'the typed text');
    // At 4 and 3 rows as well; below that the view says the terminal is too small.
    for (const [columns, rows] of [[40, 4], [80, 3]] as const) {
      term.resize(columns, rows);
      await wait((s) => s.split('\n').length >= rows && prompting(s) && cursorOn(runIds[3]!)(s), `the prompt and the highlighted run at ${columns}x${rows}`);
    }
    term.resize(80, 2);
    await wait((s) => s.startsWith('terminal too small'), 'the terminal too small at 80x2');
    term.keys('Escape');
    term.resize(120, 24);
    await wait((s) => s.startsWith('svc runs · live') && !prompting(s) && cursorOn(runIds[3]!)(s) && s.includes('↑↓/j k move'), 'the whole list at 120x24');
    term.keys('q');
    await until(term.alive, (alive) => !alive, 'svc runs to quit', term.screen);
  });

  test('m cycles the model filter through the models of the runs listed, not through every model the session has seen', { skip }, async (t) => {
    const svc = await ownOrganization(shared);
    await chat(svc, 'a', 'gpt-4o-mini');
    await chat(svc, 'b', 'gpt-4o');
    await chat(svc, 'c', 'mock-5xx');
    const term = terminal(t, { columns: 160, rows: 24 });
    term.open(['runs', ...svc.view]);
    const wait = (ok: (screen: string) => boolean, what: string) => until(term.screen, ok, what, term.screen);
    await wait((s) => s.includes('runs 1-3 of 3'), 'the list');
    // Each model in turn, though the page under a model filter lists that model alone, then all again.
    for (const model of ['gpt-4o', 'gpt-4o-mini', 'mock-5xx']) {
      term.keys('m');
      await wait((s) => s.includes(`model=${model} `) && s.includes('runs 1-1 of 1'), `model=${model}`);
    }
    term.keys('m');
    await wait((s) => s.includes('model=all ') && s.includes('runs 1-3 of 3'), 'model=all');
    // The failed runs are all mock-5xx: m offers that model alone, not the two seen before on the whole list.
    term.keys('s');
    await wait((s) => s.includes('status=completed ') && s.includes('runs 1-2 of 2'), 'status=completed');
    term.keys('s');
    await wait((s) => s.includes('status=failed ') && s.includes('runs 1-1 of 1'), 'status=failed');
    term.keys('m');
    await wait((s) => s.includes('model=mock-5xx ') && s.includes('runs 1-1 of 1'), 'model=mock-5xx, the failed runs\' model');
    term.keys('m');
    await wait((s) => s.includes('model=all ') && s.includes('status=failed '), 'model=all again');
    term.keys('q');
    await until(term.alive, (alive) => !alive, 'svc runs to quit', term.screen);
  });
});
