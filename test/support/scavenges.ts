/**
 * What V8's young-generation collections (scavenges) promote while a fixture runs: the fixture runs in a child
 * process under `--trace-gc-nvp` (one line per collection, `gc=s` for a scavenge, `promoted=<bytes>`). A fixture that
 * prints `MEASURE-START` and `MEASURE-END <requests>` has only the scavenges between the two counted.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';

export interface ScavengeTrace {
  /** Bytes each counted scavenge promoted, in order. */
  promoted: number[];
  /** The count the fixture printed with `MEASURE-END`, if it printed one. */
  requests: number | null;
}

export function scavengePromotions(fixture: string, args: string[] = []): ScavengeTrace {
  const run = spawnSync(process.execPath, ['--trace-gc-nvp', '--import', 'tsx', fixture, ...args], {
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
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
