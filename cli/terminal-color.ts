/**
 * Whether svc colours what it draws on a terminal (docs/cli.md "Output"), one rule for the runs TUI and the prompts.
 * FORCE_COLOR, when set, decides (`0` or `false` off, anything else on), as it does for Node and chalk; otherwise
 * NO_COLOR turns colour off when it is set and not empty (no-color.org: "present and not an empty string").
 */
export function colorWanted(env: NodeJS.ProcessEnv): boolean {
  const force = env.FORCE_COLOR;
  if (force !== undefined) return force !== '0' && force !== 'false';
  return env.NO_COLOR === undefined || env.NO_COLOR === '';
}

/**
 * An empty NO_COLOR is, per no-color.org, no NO_COLOR; Node's colour detection (util.styleText, which the prompts
 * use, and getColorDepth) takes any NO_COLOR as set. Dropped at start-up so every library agrees with `colorWanted`.
 */
export function dropEmptyNoColor(env: NodeJS.ProcessEnv): void {
  if (env.NO_COLOR === '') delete env.NO_COLOR;
}
