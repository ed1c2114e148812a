/**
 * docs/cli.md against the CLI itself: every command and flag `bin/svc ... --help` lists has its place in the reference,
 * and every command and flag the reference's headings and tables name exists, so the two cannot drift apart.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import test, { before } from 'node:test';
import { ensureBundle, ROOT, runSvc } from '../support/process.ts';

before(ensureBundle);

/** The flags every admin command takes, documented once under "Options of every admin command". */
const SHARED_FLAGS = ['--url', '--api-key', '--data-dir', '--json'];

interface Help {
  commands: string[];
  flags: string[];
}

/** The subcommands (`help` aside) and long flags (`--help` aside) a commander help text lists. */
function parseHelp(text: string): Help {
  const section = (title: string) => (text.split(`\n${title}:\n`)[1] ?? '').split('\n\n')[0]!.split('\n');
  const commands = section('Commands')
    .map((line) => /^ {2}([a-z][a-z-]*)\b/.exec(line)?.[1])
    .filter((name): name is string => name !== undefined && name !== 'help');
  const flags = section('Options')
    .map((line) => /^ {2}(?:-\w, )?(--[a-z][a-z-]*)/.exec(line)?.[1])
    .filter((flag): flag is string => flag !== undefined && flag !== '--help');
  return { commands, flags };
}

async function help(argv: string[]): Promise<Help> {
  const result = await runSvc([...argv, '--help']);
  assert.equal(result.code, 0, `svc ${argv.join(' ')} --help: ${result.stderr}`);
  return parseHelp(result.stdout);
}

/** docs/cli.md cut at its `## ` headings: the text of the section whose heading starts with `## \`svc <group>`. */
function sectionOf(doc: string, group: string): string | undefined {
  return doc.split(/\n(?=## )/).find((section) => section.startsWith(`## \`svc ${group}`));
}

/** The long flags a piece of the reference documents: its headings, and the first cell of its flag and command tables. */
function documentedFlags(text: string): string[] {
  const places = text.split('\n').filter((line) => line.startsWith('#') || line.startsWith('| `-') || line.startsWith('| `svc '));
  const cells = places.map((line) => (line.startsWith('|') ? line.split(' | ')[0]! : line));
  return [...new Set(cells.flatMap((cell) => [...cell.matchAll(/--[a-z][a-z-]*/g)].map((match) => match[0])))];
}

test('docs/cli.md documents every command and flag of svc --help, and no other', async () => {
  const doc = readFileSync(join(ROOT, 'docs', 'cli.md'), 'utf8');
  const top = await help([]);
  // Independent one-shot commands: run at once, each a node start and a bundle load.
  const groups = await Promise.all(
    top.commands.map(async (group) => {
      const own = await help([group]);
      const subs = await Promise.all(own.commands.map(async (sub) => ({ sub, help: await help([group, sub]) })));
      return { group, own, subs };
    }),
  );
  assert.ok(groups.length >= 8, `svc --help lists ${top.commands.join(', ')}`);

  for (const flag of top.flags) assert.match(doc, new RegExp(`\`svc ${flag}\``), `svc ${flag} is not in docs/cli.md`);
  const shared = documentedFlags(doc.split(/\n(?=#+ )/).find((section) => section.startsWith('### Options of every admin command')) ?? '');
  assert.deepEqual(shared.sort(), [...SHARED_FLAGS].sort(), 'the flags of every admin command');

  const documentedGroups = [...doc.matchAll(/^## `svc ([a-z-]+)/gm)].map((match) => match[1]!);
  assert.deepEqual(documentedGroups.sort(), [...top.commands].sort(), 'the commands of svc --help and the `## svc <command>` headings');

  for (const { group, own, subs } of groups) {
    const section = sectionOf(doc, group)!;
    // Subcommands: named as `svc <group> <sub>` in a heading or a table's first cell, both ways.
    const documentedSubs = [...section.matchAll(/^(?:#+ |\| )`svc [a-z-]+ ([a-z-]+)/gm)].map((match) => match[1]!);
    assert.deepEqual([...new Set(documentedSubs)].sort(), [...own.commands].sort(), `the subcommands of svc ${group}`);
    // Flags: a group's, or each of its subcommands', shared ones aside (documented once).
    const flags = new Set([...own.flags, ...subs.flatMap(({ help: { flags } }) => flags)].filter((flag) => !SHARED_FLAGS.includes(flag)));
    const documented = new Set(documentedFlags(section).filter((flag) => !SHARED_FLAGS.includes(flag)));
    for (const flag of flags) assert.ok(documented.has(flag), `svc ${group}: ${flag} is not in its docs/cli.md section`);
    for (const flag of documented) assert.ok(flags.has(flag), `svc ${group}: docs/cli.md documents ${flag}, which no command of it takes`);
  }
});
