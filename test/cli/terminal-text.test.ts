/**
 * Text from the server never reaches the operator's terminal raw (cli/terminal-text.ts): unit rules, then the admin
 * commands against a server that answers hostile text (any API key can put such text into runs; `--url` may name
 * a server that is not svc).
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import test, { before, type TestContext } from 'node:test';
import { terminalJson, terminalLine, terminalSafe, terminalText } from '../../cli/terminal-text.ts';
import { ensureBundle, runSvc, tempDir } from '../support/process.ts';
import { skipWithoutTmux, terminal, until } from '../support/tmux.ts';

before(ensureBundle);

const HOSTILE = 'a\u001b]0;PWNED\u0007b\u001b[2Jc\rd\u009b31me\u202ef\u2066g\u2028h\u007fi';
/** What may not appear in anything written to a terminal. */
const RAW = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

test('controls, C1, DEL and the characters that reorder or break lines are shown escaped; plain text is unchanged', () => {
  assert.equal(terminalText(HOSTILE), 'a\\u001b]0;PWNED\\u0007b\\u001b[2Jc\\u000dd\\u009b31me\\u202ef\\u2066g\\u2028h\\u007fi');
  assert.equal(terminalText('two\nlines\tand a tab'), 'two\nlines\tand a tab');
  assert.equal(terminalLine('two\nlines\tand a tab'), 'two\\u000alines\\u0009and a tab');
  for (const plain of ['gpt-4o-mini', 'Zoë Ωmega 名前 🙂', 'a-b_c.d@example.com']) assert.equal(terminalLine(plain), plain);
  assert.deepEqual(terminalSafe({ [`k${HOSTILE}`]: [HOSTILE, 1, null, { x: 'ok' }] }), { [`k${terminalLine(HOSTILE)}`]: [terminalLine(HOSTILE), 1, null, { x: 'ok' }] });
  // JSON output stays JSON of the same value.
  const value = { name: HOSTILE, nested: [HOSTILE] };
  assert.doesNotMatch(terminalJson(value), RAW);
  assert.deepEqual(JSON.parse(terminalJson(value)), value);
});

/** A server answering every request with `body` (JSON) and `status`. */
async function hostileServer(t: TestContext, status: number, body: unknown) {
  const server = createServer((_req, res) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body)));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => server.close());
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

test('admin commands print hostile text from the server escaped: tables, --json, and error messages', async (t) => {
  const key = { id: `key_${HOSTILE}`, name: HOSTILE, mode: 'optimize', appId: HOSTILE, admin: false, status: 'active', createdAt: HOSTILE };
  const listing = await hostileServer(t, 200, { keys: [key], pagination: { limit: 50, offset: 0, total: 1, hasMore: false } });
  const env = { SVC_DATA_DIR: tempDir(t) };
  const table = await runSvc(['keys', 'list', '--url', listing], { env });
  assert.equal(table.code, 0, table.stderr);
  assert.match(table.stdout, /a\\u001b\]0;PWNED\\u0007b/);
  assert.doesNotMatch(table.stdout + table.stderr, RAW);

  const json = await runSvc(['keys', 'list', '--url', listing, '--json'], { env });
  assert.equal(json.code, 0, json.stderr);
  assert.doesNotMatch(json.stdout, RAW);
  assert.deepEqual(JSON.parse(json.stdout).keys[0], key);

  const failing = await hostileServer(t, 400, { error: { code: `bad${HOSTILE}`, message: HOSTILE } });
  const error = await runSvc(['keys', 'list', '--url', failing], { env });
  assert.equal(error.code, 1);
  assert.match(error.stderr, /^svc: GET \/api\/v1\/keys\S*: HTTP 400: a\\u001b\]0;PWNED/);
  assert.doesNotMatch(error.stdout + error.stderr, RAW);
});

test('a confirmation question naming what the server answered (an organization, a user) shows its text escaped', { skip: skipWithoutTmux }, async (t) => {
  const org = { org: { id: 'org_x', name: `Acme${HOSTILE}`, plan: 'free' }, role: 'owner', members: [], seats: { used: 1, members: 1, pendingInvites: 0 } };
  const url = await hostileServer(t, 200, org);
  const term = terminal(t);
  term.open(['orgs', 'delete', '--org', 'org_x', '--url', url]);
  const screen = await until(term.screen, (s) => s.includes('(y/N)'), 'the confirmation question', term.screen);
  // Raw, the ESC sequences would have retitled the terminal and cleared the screen before the question.
  assert.match(screen, /Delete organization Acmea\\u001b\]0;PWNED\\u0007b\\u001b\[2Jc/);
  assert.notEqual(term.title(), 'PWNED');
  term.keys('n', 'Enter');
  await until(term.alive, (alive) => !alive, 'the command to end', term.screen);
});

test("the runs TUI's data from the server has every string escaped, trace payload keys included", async () => {
  const { SvcClient } = await import('../../src/client/client.ts');
  const { runsSource } = await import('../../cli/tui/runs-source.ts');
  const answers: Record<string, unknown> = {
    '/api/v1/runs/run_1/events?limit=5': { events: [{ seq: 1, type: 'tool.called', payload: { [HOSTILE]: HOSTILE, toolName: HOSTILE } }], window: { nextBefore: null } },
    '/api/v1/runs/run_1?limit=1': { run: { id: 'run_1', model: HOSTILE }, sideEffects: [{ toolName: HOSTILE, idempotencyKey: HOSTILE }] },
  };
  const transport = {
    request: async (_method: string, path: string) => ({ status: 200, headers: {}, body: answers[path], text: '' }),
    stream: async () => {
      throw new Error('not used');
    },
    close: async () => undefined,
  };
  const source = runsSource(new SvcClient(transport));
  const events = await source.events('run_1', { limit: 5 });
  assert.equal(events.events[0]!.payload[terminalLine(HOSTILE)], terminalLine(HOSTILE));
  const detail = await source.detail('run_1');
  assert.equal(detail.sideEffects[0]!.toolName, terminalLine(HOSTILE));
  assert.equal(detail.run.model, terminalLine(HOSTILE));
  assert.doesNotMatch(terminalLine(HOSTILE), RAW);
});

test("commander's usage errors quote the command line escaped: a pasted argument's control sequences never reach the terminal raw", async (t) => {
  const dataDir = ['--data-dir', tempDir(t)];
  for (const args of [
    [`--x${HOSTILE}`], // an unknown option of the program
    [`ke${HOSTILE}ys`], // an unknown command
    ['keys', 'list', `--lim${HOSTILE}it`, ...dataDir], // an unknown option of a command
    ['keys', 'list', '--limit', HOSTILE, ...dataDir], // an option's invalid value
    ['keys', `li${HOSTILE}st`, ...dataDir], // an unknown command of a group
    ['help', `ke${HOSTILE}ys`], // help for an unknown command
  ]) {
    const result = await runSvc(args);
    assert.equal(result.code, 2, result.stderr);
    assert.ok(result.stderr.includes(terminalLine(HOSTILE)), result.stderr);
    assert.doesNotMatch(result.stderr.replace(/\n/g, ''), RAW, JSON.stringify(result.stderr));
  }
});
