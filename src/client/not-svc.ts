/**
 * What an error answer that is not svc's was. svc answers every error with its JSON envelope (`{error: {code,
 * message}}`, SPEC 7) and never redirects, so an answer outside 2xx without that envelope came from something else at
 * the base URL: a proxy's or another server's HTML page, an empty body, a redirect (to a login page, from http to
 * https). Its message said `GET /api/v1/keys: HTTP 404` and no more, which read as svc's own 404, and a 3xx did not
 * say it was a redirect, nor to where (the client never follows one: transport.ts).
 */
import { quoted } from './server-text.ts';

/**
 * The words after `HTTP <status>` for an error answer that is not svc's: what it was, and the question it raises; null
 * for svc's (`enveloped`: the body holds an `error` object). A redirect is never svc's, whatever its body.
 */
export function notSvcAnswer(answer: { status: number; headers: Record<string, string>; body: unknown; text: string; enveloped: boolean }): string | null {
  const location = answer.headers['location'];
  if (answer.status >= 300 && answer.status < 400 && location !== undefined) {
    // The server's text, quoted as any is (server-text.ts): a Location may hold an escape sequence too.
    return `, a redirect to "${quoted(location)}" (not followed: svc never redirects): is it svc?`;
  }
  if (answer.enveloped) return null;
  return ` with ${whatBody(answer.headers['content-type'] ?? '', answer.body, answer.text)}, not svc's error: is it svc?`;
}

/** The kind of a body, as an operator would name it. */
function whatBody(contentType: string, body: unknown, text: string): string {
  if (text.trim() === '') return 'an empty body';
  if (/html/i.test(contentType) || /^\s*</.test(text)) return 'an HTML page';
  // transport.ts parses what is JSON; the rest stays the text it was.
  return typeof body === 'string' ? 'text' : 'JSON';
}
