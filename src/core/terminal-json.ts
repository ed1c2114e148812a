/**
 * JSON text that may be read on a terminal: `svc serve`'s log lines and the CLI's `--json` output. Their strings hold
 * what clients sent (a Host header, a name, a model), and JSON.stringify escapes only C0 controls: it writes DEL, the
 * C1 controls (U+009B is a CSI, U+009D an OSC, on terminals that act on them: a screen cleared, a window retitled)
 * and the invisible characters that reorder or break lines (bidirectional overrides and isolates, U+2028/2029) raw.
 * They can only stand inside a string of JSON text, where a `\u` escape is the same character: escaped, the text is
 * the same JSON value.
 */

const RAW_IN_JSON = /[\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

const escaped = (char: string) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`;

/** `json` with each of those characters written as its `\u` escape. */
export function terminalSafeJson(json: string): string {
  // Nearly every log line is ASCII without DEL, which a UTF-8 length tells in a fraction of the pattern's scan (~75 ns
  // against ~370 ns for a request's log line): the log writes two lines per request.
  if (Buffer.byteLength(json) === json.length && !json.includes('\u007f')) return json;
  return json.replace(RAW_IN_JSON, escaped);
}
