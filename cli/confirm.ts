/** Interactive confirmation for destructive commands; `--yes` skips it, a non-interactive stdin without it is refused. */
import { UsageError } from './connection.ts';
import { terminalLine } from './terminal-text.ts';
import { loadPrompts } from './prompts.ts';
import { currentRun } from './run-context.ts';

export async function confirmOrExit(question: string, yes: boolean | undefined): Promise<boolean> {
  if (yes) return true;
  if (!currentRun().stdin.isTTY) throw new UsageError(`${question} Refusing without a terminal to confirm; pass --yes.`);
  // The prompt draws on stderr so `svc keys revoke X | cat` still shows it.
  const { confirm } = await loadPrompts(); // only now: see cli/prompts.ts
  // The question names what the server answered (an organization's name, a user's e-mail): escaped like any of its text.
  return confirm({ message: terminalLine(question), default: false }, { output: currentRun().stderr });
}
