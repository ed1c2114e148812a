/**
 * The upstream answers of gateway calls in progress, bounded in total (`SVC_GATEWAY_INFLIGHT_ANSWER_BYTES`).
 *
 * Each answer is bounded (`SVC_PROVIDER_MAX_ANSWER_BYTES`, providers/bodies.ts) but not their sum, and an answer lives
 * several times over until its run is recorded: a buffered one as text, parsed, and written out as JSON for the
 * client and the cache; a stream's assembled for its run. Eight buffered 60 MB answers at once took svc to ~0.9 GB,
 * thirty-two 60 MB streams to ~1.5 GB. A buffered answer's bytes are counted as they arrive; a stream by what its
 * relay keeps and its parser's unfinished line (`StreamHeld`), since its bytes as received were ~4-6 times what a
 * stream of token events costs svc and about half of what one of large text events does (docs/providers.md). What a
 * call counted is held until its run is recorded or its call failed. A call whose next chunk would take the total past
 * the budget fails as `busy` (providers/types.ts), unless no other call holds any, so that one answer of any allowed
 * size always passes.
 *
 * Answers of at most SMALL_ANSWER_BYTES are neither counted nor refused: the readers compare the
 * size they already keep with it, and the budget is asked only past it; ordinary traffic pays nothing and never waits
 * for large answers. A call is known by its signal (the one object every upstream call of it carries), so that the
 * answers of one call (an embeddings request split in batches) count as one share.
 */
import type { CallSignal } from './call-signal.ts';
import { ProviderError } from './providers/types.ts';

/** The largest answer the budget ignores: a long chat answer, not an image, a batch of embeddings or a runaway. */
export const SMALL_ANSWER_BYTES = 64 * 1024;

export interface AnswerBudget {
  /** Hold `bytes` more of the call's answers; false (nothing held) when they do not fit beside the other calls'. */
  take(call: CallSignal, bytes: number): boolean;
  /** Let go of everything the call holds: its run is recorded, or its attempt failed. */
  release(call: CallSignal): void;
  /** The bytes held by all calls (tests, diagnostics). */
  heldBytes(): number;
}

export function createAnswerBudget(budgetBytes: number): AnswerBudget {
  let held = 0;
  const shares = new WeakMap<CallSignal, number>();
  return {
    take(call, bytes) {
      const mine = shares.get(call) ?? 0;
      const others = held - mine;
      if (others > 0 && held + bytes > budgetBytes) return false;
      shares.set(call, mine + bytes);
      held += bytes;
      return true;
    },
    release(call) {
      // Nothing held (the usual case): one comparison, no lookup.
      if (held === 0) return;
      const mine = shares.get(call);
      if (mine === undefined) return;
      shares.delete(call);
      held -= mine;
    },
    heldBytes: () => held,
  };
}

/**
 * Count a chunk of `bytes` of a call's answer, which is `size` bytes so far with it: nothing while the answer is at
 * most SMALL_ANSWER_BYTES, the whole answer at the chunk that takes it past, each chunk after. False when the budget
 * refuses it. No budget (a provider made without one, in tests): nothing is counted.
 */
export function countAnswerChunk(budget: AnswerBudget | undefined, call: CallSignal, size: number, bytes: number): boolean {
  if (size <= SMALL_ANSWER_BYTES || budget === undefined) return true;
  return budget.take(call, size - bytes <= SMALL_ANSWER_BYTES ? size : bytes);
}

/**
 * What a relay keeps of a text piece it appends to what it holds: a rope node of V8's (32 bytes), the piece's own string
 * (a 16-byte header) and its characters, at most two bytes each. Measured against svc serve (30 MB streams, VmHWM),
 * a stream of 4-character token events (272 bytes each) cost ~67 bytes an event, where this counts 56; one of 8 KiB
 * text events ~1.7 times its characters, where this counts about 2.
 */
export function heldTextBytes(text: string): number {
  return 2 * text.length + 48;
}

/**
 * What a relay keeps of a parsed JSON value it holds whole (an annotation, a citation, a tool's parsed input, an output
 * item): measured, a parsed value takes ~1.5-1.7 times its JSON (small objects) and ~1 time (long one-byte strings); two
 * bytes a character covers both. Asked only for what a stream keeps whole, not for its text pieces: it writes the JSON.
 */
export function heldJsonBytes(value: unknown): number {
  return heldParsedBytes(JSON.stringify(value)?.length ?? 0);
}

/** `heldJsonBytes` of a value parsed from JSON of `chars` characters, which is at hand. */
export function heldParsedBytes(chars: number): number {
  return 2 * chars;
}

/**
 * What a relay keeps of a parsed upstream event it holds as it came (the messages relay's events while a checked block
 * is open), beside its text, which the relay counts where it assembles it (`heldTextBytes`): measured, a parsed delta
 * event of a few characters takes 130-170 bytes.
 */
export const HELD_EVENT_BYTES = 160;

/**
 * What a stream holds, counted in the budget as it grows (the budget takes and never gives back until the call's run
 * is recorded, so the highest value is what is counted), with `countAnswerChunk`'s rule: nothing until it passes
 * SMALL_ANSWER_BYTES. One per stream source (a relay's `heldBytes`, a reader's unfinished line), made once a stream:
 * an event that keeps nothing pays one comparison, one that keeps a piece a subtraction and `countAnswerChunk`'s
 * comparison more.
 */
export class StreamHeld {
  private counted = 0;

  constructor(
    private readonly budget: AnswerBudget | undefined,
    private readonly call: CallSignal,
  ) {}

  /** The stream now holds `held` bytes; false when the budget refuses the growth. */
  reach(held: number): boolean {
    if (held <= this.counted) return true;
    const grown = held - this.counted;
    this.counted = held;
    return countAnswerChunk(this.budget, this.call, held, grown);
  }
}

/** The message of a call refused by the budget: svc's state, not the upstream's fault, and retried shortly. */
export const BUDGET_REFUSAL_MESSAGE =
  'svc holds as many upstream answers in progress as SVC_GATEWAY_INFLIGHT_ANSWER_BYTES allows; the answer was let go, retry shortly.';

/** The failure of a call whose answer the budget refused at `size` bytes: the upstream made it (a 2xx), svc let it go. */
export function answerBudgetFailure(provider: string, size: number, upstreamStatus: number): ProviderError {
  return new ProviderError('busy', `the upstream answer was let go at ${size} bytes: the answers in progress would pass SVC_GATEWAY_INFLIGHT_ANSWER_BYTES`, { provider, upstreamStatus });
}
