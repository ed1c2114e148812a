/**
 * What one run of the CLI reads and writes: its streams, its environment and the code it exits with. bin/svc's run is
 * the process's own; runCli (cli/program.ts) runs the program inside another process (the tests) with streams and an
 * environment of its own, several at once. The run is carried through its async calls (AsyncLocalStorage), so the
 * commands reach it without passing it along; outside any, the run is the process's. bin/svc never starts one, so
 * node's async hooks, which AsyncLocalStorage turns on at its first run, stay off in svc's processes: `currentRun()`
 * there is a check of an empty store.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { sendOperatorNotesTo } from '../src/core/operator-note.ts';

export interface CliStreams {
  readonly stdout: NodeJS.WritableStream & { isTTY?: boolean };
  readonly stderr: NodeJS.WritableStream & { isTTY?: boolean };
  readonly stdin: NodeJS.ReadableStream & { isTTY?: boolean };
  readonly env: NodeJS.ProcessEnv;
}

export interface CliRun extends CliStreams {
  /** Set by a command that fails without throwing (a broken audit chain, a declined confirmation): the run's exit code. */
  exitCode: number | undefined;
}

/** The process's own run. Getters: process.stdin and its siblings are opened on first use, and only what is used. */
const processRun: CliRun = {
  get stdout() {
    return process.stdout;
  },
  get stderr() {
    return process.stderr;
  },
  get stdin() {
    return process.stdin;
  },
  get env() {
    return process.env;
  },
  get exitCode() {
    return process.exitCode === undefined ? undefined : Number(process.exitCode);
  },
  set exitCode(code) {
    process.exitCode = code;
  },
};

const runs = new AsyncLocalStorage<CliRun>();

/** The run the calling command belongs to. */
export const currentRun = (): CliRun => runs.getStore() ?? processRun;

/** Runs `fn` as a run of its own on `streams`: its commands write there and read its environment. */
export function inRun<T>(streams: CliStreams, fn: (run: CliRun) => Promise<T>): Promise<T> {
  // svc's notes from below the CLI (an exposed data directory's parents, the console mailer's e-mail, a purge cut
  // short: src/core/operator-note.ts) go to the stderr of the run they are written in, the process's outside any.
  // Set here, by the first run: bin/svc, which starts none, keeps writing them to process.stderr itself.
  sendOperatorNotesTo(() => currentRun().stderr);
  const run: CliRun = { ...streams, exitCode: undefined };
  return runs.run(run, () => fn(run));
}
