/**
 * An answer's body with its content coding undone. svc sends none and the client asks for none, but something between
 * them (a proxy) may compress an answer unasked; read as it came, its bytes were "no JSON" or garbage text. undici's
 * own decompress interceptor is not used: reaching it loads undici's whole index, tens of milliseconds of every CLI
 * command (bin/undici-subset.cjs); node:zlib is loaded here only when an encoded answer arrives (getBuiltinModule: the
 * bundle runs in a vm.Script, which has no dynamic import).
 */
import { pipeline, type Readable } from 'node:stream';
import { quoted } from './server-text.ts';

/** The codings a proxy applies (those undici's decompress interceptor takes), by the node:zlib decoder of each. */
const DECODERS = {
  gzip: 'createGunzip',
  'x-gzip': 'createGunzip',
  deflate: 'createInflate',
  br: 'createBrotliDecompress',
} as const;

type Coding = keyof typeof DECODERS;

const isKnown = (coding: string): coding is Coding => Object.hasOwn(DECODERS, coding);

/**
 * `body` decoded as `contentEncoding` (the header's value, absent or `identity` for none) says, several codings undone
 * last first. A coding the client cannot decode is an error naming it (the body is dropped, which frees the
 * connection). The decoded bytes are what the caller's size limit counts, so a small answer that inflates to
 * gigabytes is refused as a large one is.
 */
export function decodedBody(body: Readable, contentEncoding: string | undefined, call: string): AsyncIterable<Uint8Array> {
  if (contentEncoding === undefined) return body; // svc's answers: nothing to undo, nothing spent
  const codings = contentEncoding
    .split(',')
    .map((coding) => coding.trim().toLowerCase())
    .filter((coding) => coding !== '' && coding !== 'identity');
  if (codings.length === 0) return body;
  const unknown = codings.find((coding) => !isKnown(coding));
  if (unknown !== undefined) {
    // Its abort error has no reader.
    body.on('error', () => undefined).destroy();
    throw new Error(`the answer to ${call} is encoded as "${quoted(unknown)}", which the client cannot decode`);
  }
  const zlib = process.getBuiltinModule('node:zlib');
  const decoders = (codings as Coding[]).reverse().map((coding) => zlib[DECODERS[coding]]());
  // A failure anywhere (the connection cut, bytes that do not decode) ends the last decoder with that error, where the
  // caller's read meets it; the callback has nothing left to do. The caller leaving its read early ends them all.
  pipeline([body, ...decoders], () => undefined);
  return decoders.at(-1)!;
}
