/**
 * The JSON text of a large value (an evidence packet: tens of MiB), produced in slices with a turn of the event loop
 * between them, as the text JSON.stringify would give, character for character.
 *
 * Why: JSON.stringify of such a value is one call that holds the event loop until the whole text exists (~0.3-0.5 s
 * for a packet at a run's limits), and every request of the process waits behind it. Here the value's arrays and
 * plain objects are walked down to `depth` levels and whatever lies below is stringified whole, a few KiB at a time
 * (a trace event, a side-effect record's payload); a slice ends once it holds `sliceChars` characters.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';

export interface JsonSliceOptions {
  /** Characters of text per slice (the slice that passes it ends it). */
  sliceChars?: number;
  /** Levels of arrays and plain objects walked; deeper values are stringified whole. */
  depth?: number;
  /** A turn of the event loop between two slices. */
  turn?: () => Promise<unknown>;
}

const DEFAULT_SLICE_CHARS = 64 * 1024;
const DEFAULT_DEPTH = 4;

/**
 * JSON text that is already what JSON.stringify writes for its value (a stored replay request, written by
 * JSON.stringify), spliced into the text as it is: neither parsed nor written again. JSON.stringify of a value that
 * holds one writes the same text, through toJSON (parsing it: only a caller that wants the value whole pays that), as
 * JSON.stringify's text of a value, parsed and written again, is that text.
 */
export class JsonText {
  constructor(readonly text: string) {}

  toJSON(): unknown {
    return JSON.parse(this.text);
  }
}

/** A container being written: its entries still to come and what closes it. */
interface Frame {
  readonly array: boolean;
  readonly value: Record<string, unknown> | unknown[] | JsonText;
  readonly keys: string[] | null;
  index: number;
  wrote: boolean;
  /** Spliced JSON text (JsonText), written from `index` a piece at a time, rather than a container. */
  readonly text?: string;
}

/** Characters of spliced text written in one step. */
const TEXT_PIECE_CHARS = 16 * 1024;

/**
 * Where the piece of `text` from `start` ends: never between the two halves of a surrogate pair, which would each be
 * written as U+FFFD when a slice is encoded to UTF-8 on its own.
 */
function pieceEnd(text: string, start: number): number {
  const end = Math.min(text.length, start + TEXT_PIECE_CHARS);
  const last = text.charCodeAt(end - 1);
  return end < text.length && last >= 0xd800 && last <= 0xdbff ? end + 1 : end;
}

export async function* jsonSlices(value: unknown, options: JsonSliceOptions = {}): AsyncGenerator<string, void, undefined> {
  const sliceChars = options.sliceChars ?? DEFAULT_SLICE_CHARS;
  const turn = options.turn ?? nextTurn;
  const writer = new SliceWriter(options.depth ?? DEFAULT_DEPTH);
  // A top-level value without JSON text (undefined, a function) has no slices, as JSON.stringify answers undefined.
  if (!writer.write('', value, 0)) return;
  for (let slice = writer.next(sliceChars); slice !== null; ) {
    yield slice;
    slice = writer.next(sliceChars);
    if (slice !== null) await turn();
  }
}

/**
 * A member of an object whose text is written as its members are read (objectSlices): its value, got when the member
 * is written, or its value's entries (an array), a page at a time.
 */
export type StreamedMember =
  | { readonly key: string; readonly value: () => unknown }
  | { readonly key: string; readonly pages: () => AsyncIterable<readonly unknown[]> };

/**
 * The JSON text of the object `members` make (objectOf), in slices as jsonSlices writes a value: each member got, or
 * each page of its entries read, only when the text reaches it, so the whole object is never held at once (an
 * evidence packet's 10,000 side effects and its trace). The text is JSON.stringify's of objectOf(members).
 */
export async function* objectSlices(members: readonly StreamedMember[], options: JsonSliceOptions = {}): AsyncGenerator<string, void, undefined> {
  const sliceChars = options.sliceChars ?? DEFAULT_SLICE_CHARS;
  const turn = options.turn ?? nextTurn;
  // One writer for the whole text, each member written at the level it has in the object (1, its entries 2), so the
  // depth walked is the one jsonSlices walks for the whole object.
  const writer = new SliceWriter(options.depth ?? DEFAULT_DEPTH);
  writer.emit('{');
  let wrote = false;
  for (const member of members) {
    const prefix = `${wrote ? ',' : ''}${JSON.stringify(member.key)}:`;
    if ('pages' in member) {
      writer.emit(`${prefix}[`);
      wrote = true;
      let index = 0;
      for await (const page of member.pages()) {
        for (const entry of page) {
          if (index > 0) writer.emit(',');
          // An entry without JSON text is null, as JSON.stringify writes it in an array.
          if (!writer.write(String(index), entry, 2)) writer.emit('null');
          index += 1;
          for (let slice = writer.full(sliceChars); slice !== null; slice = writer.full(sliceChars)) {
            yield slice;
            await turn();
          }
        }
      }
      writer.emit(']');
      continue;
    }
    const value = spliceOrResolve(member.key, await member.value());
    // A member without JSON text is left out, with its key.
    if (!hasText(value)) continue;
    writer.emit(prefix);
    wrote = true;
    writer.write(member.key, value, 1, true);
    for (let slice = writer.full(sliceChars); slice !== null; slice = writer.full(sliceChars)) {
      yield slice;
      await turn();
    }
  }
  writer.emit('}');
  const last = writer.next(sliceChars);
  if (last !== null) yield last;
}

/** The object `members` make: what objectSlices writes the text of, read whole. */
export async function objectOf(members: readonly StreamedMember[]): Promise<Record<string, unknown>> {
  const object: Record<string, unknown> = {};
  for (const member of members) {
    if (!('pages' in member)) {
      object[member.key] = await member.value();
      continue;
    }
    const entries: unknown[] = [];
    for await (const page of member.pages()) entries.push(...page);
    object[member.key] = entries;
  }
  return object;
}

/** Writes a value's text in pieces, keeping the containers it is inside on a stack. */
class SliceWriter {
  private readonly stack: Frame[] = [];
  private pending: string[] = [];
  private pendingChars = 0;

  constructor(private readonly depth: number) {}

  /** The next slice: at least `chars` characters unless the text ends first; null once it has ended. */
  next(chars: number): string | null {
    while (this.pendingChars < chars && this.stack.length > 0) this.step();
    return this.pendingChars === 0 ? null : this.take();
  }

  /** The next slice if the text written so far makes one of `chars` characters; else null, everything written pending. */
  full(chars: number): string | null {
    while (this.pendingChars < chars && this.stack.length > 0) this.step();
    return this.pendingChars >= chars ? this.take() : null;
  }

  private take(): string {
    const slice = this.pending.join('');
    this.pending = [];
    this.pendingChars = 0;
    return slice;
  }

  /**
   * Write `value` (the entry `key` of its container, at `level`), opening it when it is a container to walk: false
   * when it has no JSON text. `resolved`: its toJSON was already applied.
   */
  write(key: string, raw: unknown, level: number, resolved = false): boolean {
    if (raw instanceof JsonText) {
      // Spliced a slice at a time, as a container's entries are.
      this.stack.push({ array: false, value: raw, keys: null, index: 0, wrote: false, text: raw.text });
      return true;
    }
    const value = resolved ? raw : resolve(key, raw);
    if (!hasText(value)) return false;
    if (level < this.depth && Array.isArray(value)) {
      this.emit('[');
      this.stack.push({ array: true, value, keys: null, index: 0, wrote: false });
      return true;
    }
    if (level < this.depth && isPlainObject(value)) {
      this.emit('{');
      this.stack.push({ array: false, value, keys: Object.keys(value), index: 0, wrote: false });
      return true;
    }
    this.emit(JSON.stringify(value));
    return true;
  }

  /** Write the next entry of the innermost open container, or close it. */
  private step(): void {
    const frame = this.stack[this.stack.length - 1]!;
    if (frame.text !== undefined) {
      this.emit(frame.text.slice(frame.index, (frame.index = pieceEnd(frame.text, frame.index))));
      if (frame.index >= frame.text.length) this.stack.pop();
      return;
    }
    const length = frame.keys ? frame.keys.length : (frame.value as unknown[]).length;
    if (frame.index >= length) {
      this.stack.pop();
      this.emit(frame.array ? ']' : '}');
      return;
    }
    const index = frame.index++;
    if (frame.array) {
      if (frame.wrote) this.emit(',');
      frame.wrote = true;
      // An array entry without JSON text (undefined, a function, a symbol) is null, as JSON.stringify writes it.
      if (!this.write(String(index), (frame.value as unknown[])[index], this.stack.length)) this.emit('null');
      return;
    }
    const key = frame.keys![index]!;
    const entry = spliceOrResolve(key, (frame.value as Record<string, unknown>)[key]);
    // A property without JSON text is left out, with its key.
    if (!hasText(entry)) return;
    this.emit(`${frame.wrote ? ',' : ''}${JSON.stringify(key)}:`);
    frame.wrote = true;
    this.write(key, entry, this.stack.length, true);
  }

  /** Text written as it is (punctuation between the values written). */
  emit(text: string): void {
    this.pending.push(text);
    this.pendingChars += text.length;
  }
}

/** The value JSON.stringify writes for an entry: its toJSON(key) when it has one. */
function resolve(key: string, value: unknown): unknown {
  if (value !== null && (typeof value === 'object' || typeof value === 'bigint')) {
    const toJSON = (value as { toJSON?: unknown }).toJSON;
    if (typeof toJSON === 'function') return (toJSON as (key: string) => unknown).call(value, key);
  }
  return value;
}

/** An entry's value to write: spliced JSON text as it is (its toJSON parses it), else as resolve gives it. */
function spliceOrResolve(key: string, value: unknown): unknown {
  return value instanceof JsonText ? value : resolve(key, value);
}

function hasText(value: unknown): boolean {
  return value !== undefined && typeof value !== 'function' && typeof value !== 'symbol';
}

/** An object JSON.stringify writes from its own enumerable keys (not a boxed primitive or other special object). */
function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object') return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}
