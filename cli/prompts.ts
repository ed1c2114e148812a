/**
 * The interactive prompts (@inquirer/prompts: confirmations, hidden questions), loaded only when one is shown: the
 * library stays out of every other command's start-up (svc serve). They draw on stderr, so stdout stays data only,
 * but the library colours with util.styleText, which asks stdout whether to: `svc keys revoke X | cat` on a terminal
 * drew the question without colour. So, unless FORCE_COLOR already decides, it is set for this process from what
 * `colorWantedOn` says of stderr, before the library loads (its default theme is styled as it loads).
 */
import { colorWantedOn } from './terminal-color.ts';

export async function loadPrompts(): Promise<typeof import('@inquirer/prompts')> {
  // For the whole process: safe, as neither the CLI nor src/ starts a child process that would inherit it.
  if (process.env.FORCE_COLOR === undefined) process.env.FORCE_COLOR = colorWantedOn(process.stderr, process.env) ? '1' : '0';
  return import('@inquirer/prompts');
}

/**
 * How a secret is asked (a password, a webhook secret): each character drawn as `*`, and the library's Ctrl-T
 * "toggle visibility" off, which drew the whole secret in clear on the terminal (and in its scrollback or a shared
 * tmux pane) where docs/cli.md promises a hidden prompt. A password is asked twice instead, to catch a typo.
 */
export const HIDDEN_ANSWER = { mask: '*', toggleMask: false } as const;
