/** Time comes from JS (never `now()` in SQL); a clock is injected where tests need to move it. */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

export function toIso(epochMs: number): string {
  return new Date(epochMs).toISOString();
}
