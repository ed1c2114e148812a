/**
 * Whether svc colours what it draws on a terminal (docs/cli.md "Output"), one rule for the runs TUI and the prompts.
 * FORCE_COLOR, when set, decides as Node reads it (tty getColorDepth, which util.styleText in the prompts follows): empty,
 * `1`, `true`, `2` or `3` on, anything else (`0`, `false`, `yes`) off; otherwise NO_COLOR turns colour off when it is
 * set and not empty (no-color.org: "present and not an empty string").
 */
export function colorWanted(env: NodeJS.ProcessEnv): boolean {
  const force = env.FORCE_COLOR;
  if (force !== undefined) return FORCE_COLOR_ON.has(force);
  return env.NO_COLOR === undefined || env.NO_COLOR === '';
}

/**
 * `colorWanted` for what is drawn on `stream` (the prompts draw on stderr): FORCE_COLOR or NO_COLOR decide when they
 * do, otherwise a terminal with colours there (as Node asks it of stdout for util.styleText: tty getColorDepth).
 */
export function colorWantedOn(stream: NodeJS.WriteStream, env: NodeJS.ProcessEnv): boolean {
  if (env.FORCE_COLOR !== undefined || !colorWanted(env)) return colorWanted(env);
  return stream.isTTY === true && stream.hasColors();
}

/** The FORCE_COLOR values Node takes as colour on (lib/internal/tty.js): 16 colours, 256, 16 million. */
const FORCE_COLOR_ON: ReadonlySet<string> = new Set(['', '1', 'true', '2', '3']);

/**
 * An empty NO_COLOR is, per no-color.org, no NO_COLOR; Node's colour detection (util.styleText, which the prompts
 * use, and getColorDepth) takes any NO_COLOR as set. Dropped at start-up so every library agrees with `colorWanted`.
 */
export function dropEmptyNoColor(env: NodeJS.ProcessEnv): void {
  if (env.NO_COLOR === '') delete env.NO_COLOR;
}
