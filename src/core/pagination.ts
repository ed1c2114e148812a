/** The one pagination shape of every management list endpoint. */
import { z } from 'zod';
import { withPlusHint } from './query-parameters.ts';

export interface Page {
  limit: number;
  offset: number;
  total: number;
  hasMore: boolean;
}

export function pageOf(limit: number, offset: number, total: number): Page {
  return { limit, offset, total, hasMore: offset + limit < total };
}

const QUERY_INTEGER = /^[+-]?\d+$/;

const INTEGER_MESSAGE = 'expected an integer (decimal digits)';

/**
 * An integer query parameter from `min` to `max`. Decimal digits with an optional sign only: coercing with Number()
 * read `0x10` as 16, `1e3` as 1000 and ` 5` as 5, where `since` refuses `1e3`. A value that a `+` for each space would
 * make an integer was sent with an unencoded sign (`limit=+5`), which the refusal says.
 */
function integerText(min: number, max: number) {
  return z
    .string()
    .transform((value, ctx) => {
      if (QUERY_INTEGER.test(value)) return Number(value);
      ctx.addIssue({ code: 'custom', message: withPlusHint(INTEGER_MESSAGE, value, (text) => QUERY_INTEGER.test(text)) });
      return z.NEVER;
    })
    .pipe(z.number().int().min(min).max(max));
}

/** A blank value is an absent one, as a blank filter is no filter. */
const blankIsAbsent = (value: unknown) => (typeof value === 'string' && value.trim() === '' ? undefined : value);

/** An integer query parameter from `min` to `max`, `fallback` when absent or blank. */
export function queryInteger(min: number, max: number, fallback: number) {
  return z.preprocess(blankIsAbsent, integerText(min, max).default(fallback));
}

/** An optional integer query parameter of at least `min`; undefined when absent or blank. */
export function optionalQueryInteger(min: number) {
  return z.preprocess(blankIsAbsent, integerText(min, Number.MAX_SAFE_INTEGER).optional());
}

/** Query schema for `limit`/`offset` with a default and maximum page size. */
export function paginationQuery(defaultLimit = 50, maxLimit = 200) {
  return z.object({
    limit: queryInteger(1, maxLimit, defaultLimit),
    offset: queryInteger(0, Number.MAX_SAFE_INTEGER, 0),
  });
}
