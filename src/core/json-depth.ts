/**
 * How deeply objects and arrays may nest in JSON that svc takes from outside: request bodies (src/http/json-body.ts)
 * and upstream answers (the providers). `JSON.parse` takes any depth, but much of what such a value meets afterwards
 * walks it recursively (the canonical JSON of the cache key, the replay record and the response hash, validation,
 * `JSON.stringify` of the evidence): a value nested tens of thousands deep overflowed the stack there. 128 levels is
 * serde_json's default bound too; real bodies and answers (tool schemas included) stay far below it.
 */

export const MAX_JSON_DEPTH = 128;

/** Whether objects and arrays in `value` nest more than `max` levels deep (the outermost is level 1). */
export function nestsDeeperThan(value: unknown, max: number): boolean {
  if (value === null || typeof value !== 'object') return false;
  // Iterative, so a value of any depth is walked without recursion; most bodies hold a few dozen containers.
  const values: object[] = [value];
  const depths: number[] = [1];
  while (values.length > 0) {
    const current = values.pop()!;
    const depth = depths.pop()!;
    if (depth > max) return true;
    if (Array.isArray(current)) {
      for (const item of current) {
        if (item !== null && typeof item === 'object') {
          values.push(item);
          depths.push(depth + 1);
        }
      }
    } else {
      for (const key in current) {
        const item = (current as Record<string, unknown>)[key];
        if (item !== null && typeof item === 'object') {
          values.push(item);
          depths.push(depth + 1);
        }
      }
    }
  }
  return false;
}
