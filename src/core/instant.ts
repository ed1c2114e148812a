/** The query parameter for a point in time (`since`, `until`); its forms and range are instant-form.ts's. */
import { z } from 'zod';
import { withPlusHint } from './query-parameters.ts';
import { FORMS_MESSAGE, INSTANT_MAX_MS, INSTANT_MIN_MS, parseInstant } from './instant-form.ts';

export { INSTANT_MAX_MS, INSTANT_MIN_MS } from './instant-form.ts';

/** Optional query instant: epoch milliseconds out, undefined when absent or blank; 400 when unparseable or out of range. */
export const instantQuery = z
  .string()
  .optional()
  .transform((sent, ctx) => {
    const value = sent?.trim();
    if (!value) return undefined;
    const ms = parseInstant(value);
    if (ms === null) {
      // A value that a `+` for each space (as sent: `+002026-03-07` arrives as ` 002026-03-07`) would make an instant
      // was sent with an unencoded `+`; `March 7 2026` was not.
      ctx.addIssue({ code: 'custom', message: withPlusHint(FORMS_MESSAGE, sent!, (text) => parseInstant(text) !== null) });
      return z.NEVER;
    }
    if (ms < INSTANT_MIN_MS || ms > INSTANT_MAX_MS) {
      ctx.addIssue({ code: 'custom', message: 'must be between 0000-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z' });
      return z.NEVER;
    }
    return ms;
  });
