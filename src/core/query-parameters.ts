/**
 * The query of a management endpoint takes the parameters its schema names and no other. An unknown parameter was
 * dropped, and the answer read as if it had been applied: `/runs?until=` (runs take `since` only) answered runs after
 * that date too, `/audit?offset=` (the log pages by `before`) the first page again and again, `/runs?status[]=failed`
 * (bracket forms are no parameter of svc's) every status. It is a 400 naming the parameter, as a bad value is.
 */
import { z } from 'zod';

/**
 * The refusal `message` of a query value `sent`, saying how to send a `+` when a `+` in place of each space would make
 * the value `valid`. A query is form-encoded: `+` is a space, so the sign of `limit=+5` and the offset of
 * `since=2026-03-07T12:00:00+01:00` arrive as spaces, and the value is refused for a character the client never typed.
 * svc keeps form encoding (URLSearchParams, browsers' forms and svc's own client send a space as `+`).
 */
export function withPlusHint(message: string, sent: string, valid: (value: string) => boolean): string {
  return sent.includes(' ') && valid(sent.replaceAll(' ', '+')) ? `${message}; a + in a query reads as a space: send it as %2B` : message;
}

/** An optional filter value of at most `max` characters, trimmed; undefined when absent or blank (a blank filter is no filter). */
export const optionalText = (max: number) =>
  z
    .string()
    .trim()
    .max(max)
    .optional()
    .transform((value) => (value ? value : undefined));

/**
 * An optional filter among `values`, trimmed; undefined when absent or blank, as a blank text filter is (a form's
 * "any" choice sends `status=`), else one of them or a 400.
 */
export const optionalChoice = <const T extends readonly [string, ...string[]]>(values: T) => optionalText(200).pipe(z.enum(values).optional());

/** The parsed query as the query parser hands it over: an object of own keys, which it is read as, never copied. */
const parsedQuery = z.custom<Record<string, unknown>>((value) => typeof value === 'object' && value !== null);

/**
 * `schema` (an object schema of query parameters, refinements allowed) refusing any parameter it does not name. The
 * issue is put on the parameter itself: zod's own strict objects put theirs on the object, which the error mapping
 * (src/http/error-shapes.ts) names `body`. The names are read from the parsed query itself (a null-prototype object
 * whose keys are every name sent): a `z.record` first copied it into a plain object, where a `__proto__` key sets the
 * prototype instead of becoming a key, so `/audit?__proto__=1` was answered as if it had no query.
 */
export function knownQuery<S extends z.ZodObject>(schema: S) {
  const names = new Set(Object.keys(schema.shape));
  const takes = names.size === 0 ? 'none' : [...names].join(', ');
  return parsedQuery
    .superRefine((query, ctx) => {
      for (const name of Object.keys(query)) {
        if (!names.has(name)) ctx.addIssue({ code: 'custom', path: [name], message: `unknown query parameter; this endpoint takes ${takes}` });
      }
    })
    .pipe(schema);
}

/** The query of an endpoint that takes none (a rollup of fixed extent): any parameter is refused. */
export const noQuery = knownQuery(z.object({}));
