/**
 * A ceiling on V8's young generation, set while the process runs.
 *
 * V8 starts each semi-space of the young generation at 1 MiB and doubles it (while enough survives its scavenges) up
 * to the most the isolate was created with: 16 MiB on 64-bit, so 32 MiB of RSS once the server is under load. That
 * most is fixed when the process starts (`--max-semi-space-size`), which `bin/svc` cannot choose for its own
 * process. How much a semi-space grows by is read each time it grows (`--semi-space-growth-factor`): a factor of 1
 * once the ceiling is reached keeps it there, the default 2 lets it grow back after V8 shrank it (it does when
 * the process goes idle). Each garbage collection rechecks which applies.
 *
 * With 8 MiB semi-spaces the bench's soak ends ~15-20 MB lower, for ~6% more CPU per request at concurrency 16
 * (docs/performance-notes.md): a scavenge copies what is alive in the young generation (the requests in flight, the
 * ledger writes waiting for their commit), about as much at either size, and the smaller one is collected twice as
 * often.
 */
import { PerformanceObserver } from 'node:perf_hooks';
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';

export const DEFAULT_SEMI_SPACE_BYTES = 8 * 1024 * 1024;

const GROWTH_FACTOR_DEFAULT = 2;
const GROWTH_FACTOR_STOPPED = 1;

/** The young generation's size: both semi-spaces. */
export function youngGenerationBytes(): number {
  return getHeapSpaceStatistics().find((space) => space.space_name === 'new_space')?.space_size ?? 0;
}

/** Keep each semi-space at or under `semiSpaceBytes` (rounded up to what V8 grows by) until the returned stop. */
export function capYoungGeneration(semiSpaceBytes = DEFAULT_SEMI_SPACE_BYTES): () => void {
  let growthFactor = GROWTH_FACTOR_DEFAULT;
  const recheck = (): void => {
    const wanted = youngGenerationBytes() >= 2 * semiSpaceBytes ? GROWTH_FACTOR_STOPPED : GROWTH_FACTOR_DEFAULT;
    if (wanted === growthFactor) return;
    growthFactor = wanted;
    setFlagsFromString(`--semi-space-growth-factor=${wanted}`);
  };
  const observer = new PerformanceObserver(recheck);
  observer.observe({ entryTypes: ['gc'] });
  recheck();
  return () => {
    observer.disconnect();
    if (growthFactor !== GROWTH_FACTOR_DEFAULT) setFlagsFromString(`--semi-space-growth-factor=${GROWTH_FACTOR_DEFAULT}`);
  };
}
