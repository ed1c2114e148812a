/**
 * A trace event's payload as stored: its JSON text parsed. svc stores only what JSON.stringify wrote, so text that is
 * not JSON was edited or damaged in the data file. It stands as `{storedText}`, marked so that verification reports it
 * (chain.ts), rather than failing every read of the run: its trace and evidence packet still show it, integrity says
 * where it is.
 */
const unreadable = new WeakSet<object>();

export function storedPayload(text: string): Record<string, unknown> {
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch {
    const standIn = { storedText: text };
    unreadable.add(standIn);
    return standIn;
  }
}

/** Whether `payload` stands for stored text that is not JSON. */
export function isUnreadablePayload(payload: unknown): boolean {
  return typeof payload === 'object' && payload !== null && unreadable.has(payload);
}
