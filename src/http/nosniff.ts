/**
 * `X-Content-Type-Options: nosniff`, on every answer svc sends. Without it a browser may read a body as other than its
 * Content-Type says: a JSON answer or an SSE stream that echoes a caller's `<script>` sniffed as HTML runs in svc's
 * origin, where the pages and their session cookie live.
 *
 * Set where each kind of answer is written, once: the app's first onRequest hook (every reply fastify writes; the
 * gateway's streams copy their reply's headers), the router's errors, which no hook sees (src/http/app.ts), and the
 * raw answers of the HTTP layer (src/http/client-errors.ts).
 */
export const NOSNIFF_HEADER = 'x-content-type-options';
export const NOSNIFF = 'nosniff';
