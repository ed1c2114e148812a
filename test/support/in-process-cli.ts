/**
 * The `svc` program run inside the test process (runCli, cli/program.ts): for tests of a command's output and exit
 * code, each without a node start and a bundle load (~0.25 s of CPU). Its results are runSvc's. What is a process's
 * stays with runSvc (test/support/process.ts): bin/svc and its bundle, signals, a terminal and the prompts, svc serve,
 * the working directory, a data directory another process holds (a lock naming this process reads as its own).
 * svc's own notes from below the CLI (src/core/operator-note.ts: an exposed data directory's parents, the console
 * mailer's e-mail, a purge cut short) are the run's stderr, as they are bin/svc's.
 */
import { Readable, Writable } from 'node:stream';
import { COMMAND_GROUPS } from '../../cli/command-groups.ts';
import { runCli } from '../../cli/program.ts';
import type { RunResult } from './process.ts';

/** Text written to it, as it is written. */
function collector(): { stream: Writable; text: () => string } {
  let text = '';
  const stream = new Writable({ write: (chunk, _encoding, done) => ((text += String(chunk)), done()) });
  return { stream, text: () => text };
}

/** `svc <args>` in-process, with runSvc's environment (this process's, SVC_LOG_LEVEL silent, then `env`) and stdin. */
export async function runSvcInProcess(args: string[], options: { env?: Record<string, string>; input?: string } = {}): Promise<RunResult> {
  const stdout = collector();
  const stderr = collector();
  const code = await runCli(COMMAND_GROUPS, args, {
    stdout: stdout.stream,
    stderr: stderr.stream,
    stdin: Readable.from(options.input ? [Buffer.from(options.input)] : []),
    env: { ...process.env, SVC_LOG_LEVEL: 'silent', ...options.env },
  });
  return { code, stdout: stdout.text(), stderr: stderr.text() };
}
