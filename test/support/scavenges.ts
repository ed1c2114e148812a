/**
 * What V8's young-generation collections (scavenges) promote while a fixture runs: the fixture runs in a child
 * process under `--trace-gc-nvp` (one line per collection, `gc=s` for a scavenge, `promoted=<bytes>`). A fixture that
 * prints `MEASURE-START` and `MEASURE-END <requests>` has only the scavenges between the two counted.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';

export interface ScavengeTrace {
  /** Bytes each counted scavenge promoted, in order. */
  promoted: number[];
  /** The count the fixture printed with `MEASURE-END`, if it printed one. */
  requests: number | null;
}

/** Run the fixture and collect its output; asynchronous, so a test file can run several fixtures at once. */
function runFixture(fixture: string, args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--trace-gc-nvp', '--import', 'tsx', fixture, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout: Buffer.concat(stdout).toString('utf8'), stderr: Buffer.concat(stderr).toString('utf8') }));
  });
}

export async function scavengePromotions(fixture: string, args: string[] = []): Promise<ScavengeTrace> {
  const run = await runFixture(fixture, args);
  assert.equal(run.status, 0, run.stderr);
  const lines = run.stdout.split('\n');
  let measuring = !lines.some((line) => line.startsWith('MEASURE-START'));
  let requests: number | null = null;
  const promoted: number[] = [];
  for (const line of lines) {
    if (line.startsWith('MEASURE-START')) measuring = true;
    else if (line.startsWith('MEASURE-END')) {
      measuring = false;
      requests = Number(line.split(' ')[1]);
    } else if (measuring && / gc=s /.test(line)) {
      promoted.push(Number(/ promoted=(\d+)/.exec(line)?.[1] ?? 0));
    }
  }
  return { promoted, requests };
}
