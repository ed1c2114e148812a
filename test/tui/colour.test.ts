/**
 * Colour in a real terminal (docs/cli.md "Output"): NO_COLOR turns it off only when set and not empty (no-color.org),
 * FORCE_COLOR decides when set (`1`, `true`, `2`, `3` or empty on, anything else off, as Node reads it), in the runs
 * TUI and the interactive prompts alike.
 */
import assert from 'node:assert/strict';
import test, { before } from 'node:test';
import { runSvcInProcess } from '../support/in-process-cli.ts';
import { ensureBundle, tempDir } from '../support/process.ts';
import { skipWithoutTmux as skip, terminal, until } from '../support/tmux.ts';

before(ensureBundle);

/** An SGR sequence that sets a colour or attribute (not the reset `\u001b[0m` / `\u001b[m`, which tmux may print anyway). */
const STYLED = /\u001b\[(?!0?m)[0-9;]*m/;

const CASES: Array<{ env: Record<string, string | null>; colour: boolean }> = [
  { env: { NO_COLOR: null, FORCE_COLOR: null }, colour: true },
  { env: { NO_COLOR: '', FORCE_COLOR: null }, colour: true },
  { env: { NO_COLOR: '1', FORCE_COLOR: null }, colour: false },
  { env: { NO_COLOR: null, FORCE_COLOR: '0' }, colour: false },
  { env: { NO_COLOR: '1', FORCE_COLOR: '1' }, colour: true },
  // Node's rule (tty getColorDepth, which util.styleText follows): only '', 1, true, 2 and 3 force colour on.
  { env: { NO_COLOR: null, FORCE_COLOR: 'yes' }, colour: false },
];
const named = (env: Record<string, string | null>) =>
  Object.entries(env)
    .map(([name, value]) => (value === null ? `${name} unset` : `${name}=${JSON.stringify(value)}`))
    .join(', ');

for (const { env, colour } of CASES) {
  test(`the runs TUI with ${named(env)} is ${colour ? 'in colour' : 'without colour'}`, { skip }, async (t) => {
    const dataDir = tempDir(t);
    const term = terminal(t, { columns: 100, rows: 20 });
    term.open(['runs', '--data-dir', dataDir], { env });
    await until(term.screen, (s) => s.includes('not live: live updates need svc serve'), 'the in-process notice', term.screen);
    const notice = term.styledScreen().split('\n').find((line) => line.includes('not live'))!;
    assert.equal(STYLED.test(notice), colour, JSON.stringify(notice));
    term.keys('q');
    await until(term.alive, (alive) => !alive, 'svc runs to quit', term.screen);
  });

  for (const stdoutPiped of [false, true]) {
    // The prompt draws on stderr: `svc keys revoke X | cat` shows it on the terminal, coloured by the same rule.
    test(`a confirmation prompt with ${named(env)}${stdoutPiped ? ', stdout piped,' : ''} is ${colour ? 'in colour' : 'without colour'}`, { skip }, async (t) => {
      const dataDir = tempDir(t);
      // The key to revoke, made in-process: only the prompt is this test's, in bin/svc on the terminal.
      const created = await runSvcInProcess(['keys', 'create', '--name', 'k', '--json', '--data-dir', dataDir]);
      assert.equal(created.code, 0, created.stderr);
      const term = terminal(t, { columns: 100, rows: 20 });
      term.open(['keys', 'revoke', JSON.parse(created.stdout).key.id, '--data-dir', dataDir], { env, stdoutPiped });
      await until(term.screen, (s) => s.includes('Revoke API key'), 'the question', term.screen);
      const question = term.styledScreen().split('\n').find((line) => line.includes('Revoke API key'))!;
      assert.equal(STYLED.test(question), colour, JSON.stringify(question));
      term.keys('n', 'Enter');
      await until(term.alive, (alive) => !alive, 'svc keys revoke to end', term.screen);
    });
  }
}
