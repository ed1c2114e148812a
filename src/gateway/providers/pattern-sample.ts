/**
 * A string a JSON Schema `pattern` matches, for the mock's structured outputs and tool arguments: zod writes one for
 * every `.regex()` and for its ISO formats (`z.iso.time()` matches no `00:00:00Z`), and the SDK helpers check the
 * answer against it. The pattern is walked once, taking the first alternative, the fewest repetitions a quantifier
 * allows and the first character a class allows; what the walk cannot write (a lookaround, a back-reference) gives
 * undefined, as does a result the pattern does not match after all.
 */
import { patternRegExp } from '../tool-schemas.ts';

/** Thrown where the walk meets what it cannot write. */
class Unwritable extends Error {}

/** Characters tried, in order, for a negated class or an escape of a class (`\W`, `\S`, `\D`). */
const CANDIDATES = 'a0A_-x. ';

const CLASS_ESCAPES: Record<string, string> = { d: '0', w: 'a', s: ' ', D: 'a', W: '-', S: 'a' };

class Walker {
  private at = 0;
  constructor(private readonly pattern: string) {}

  run(): string {
    const out = this.alternatives();
    if (this.at < this.pattern.length) throw new Unwritable();
    return out;
  }

  /** `a|b|c`: the first alternative, the others skipped (walked, so that their groups close where they should). */
  private alternatives(): string {
    const first = this.sequence();
    while (this.pattern[this.at] === '|') {
      this.at += 1;
      this.sequence();
    }
    return first;
  }

  private sequence(): string {
    let out = '';
    while (this.at < this.pattern.length && this.pattern[this.at] !== '|' && this.pattern[this.at] !== ')') {
      const atom = this.atom();
      out += atom.repeat(this.quantifier());
    }
    return out;
  }

  /** The fewest repetitions the quantifier after an atom allows (1 when none follows). */
  private quantifier(): number {
    const c = this.pattern[this.at];
    let min = 1;
    if (c === '?' || c === '*') min = 0;
    else if (c === '+') min = 1;
    else if (c === '{') {
      const bounds = /^\{(\d+)(,\d*)?\}/.exec(this.pattern.slice(this.at));
      if (!bounds) return 1; // a literal `{`, as JavaScript reads one that opens no quantifier
      this.at += bounds[0].length - 1;
      min = Number(bounds[1]);
    } else return 1;
    this.at += 1;
    if (this.pattern[this.at] === '?') this.at += 1; // lazy
    return min;
  }

  private atom(): string {
    const c = this.pattern[this.at++]!;
    switch (c) {
      case '^':
      case '$':
        return '';
      case '.':
        return 'a';
      case '(': {
        if (this.pattern[this.at] === '?') {
          if (this.pattern[this.at + 1] === ':') this.at += 2;
          else if (this.pattern[this.at + 1] === '<' && /[A-Za-z]/.test(this.pattern[this.at + 2] ?? '')) this.at = this.pattern.indexOf('>', this.at) + 1;
          else throw new Unwritable(); // a lookaround
        }
        const inner = this.alternatives();
        if (this.pattern[this.at++] !== ')') throw new Unwritable();
        return inner;
      }
      case '[':
        return this.characterClass();
      case '\\':
        return this.escape(false);
      default:
        return c;
    }
  }

  /** The character after a backslash; in a class, `\b` is a backspace. */
  private escape(inClass: boolean): string {
    const c = this.pattern[this.at++];
    if (c === undefined) throw new Unwritable();
    if (c in CLASS_ESCAPES) return CLASS_ESCAPES[c]!;
    if (c === 'b' || c === 'B') {
      if (inClass && c === 'b') return '\b';
      throw new Unwritable();
    }
    if (/[1-9k]/.test(c)) throw new Unwritable(); // a back-reference
    const controls: Record<string, string> = { n: '\n', r: '\r', t: '\t', f: '\f', v: '\v', '0': '\0' };
    if (c in controls) return controls[c]!;
    if (c === 'x' || c === 'u') {
      const hex = /^[0-9a-fA-F]{2,4}/.exec(this.pattern.slice(this.at))?.[0] ?? '';
      const digits = c === 'x' ? hex.slice(0, 2) : hex.slice(0, 4);
      if (digits.length !== (c === 'x' ? 2 : 4)) throw new Unwritable();
      this.at += digits.length;
      return String.fromCharCode(parseInt(digits, 16));
    }
    if (c === 'p' || c === 'P') throw new Unwritable();
    return c;
  }

  /** `[...]`: its first character (or the start of its first range); for `[^...]`, a candidate it does not hold. */
  private characterClass(): string {
    const negated = this.pattern[this.at] === '^';
    if (negated) this.at += 1;
    const start = this.at;
    let first: string | undefined;
    while (this.at < this.pattern.length && (this.pattern[this.at] !== ']' || this.at === start)) {
      const c = this.pattern[this.at++]!;
      const char = c === '\\' ? this.escape(true) : c;
      first ??= char;
    }
    if (this.pattern[this.at++] !== ']') throw new Unwritable();
    if (!negated) {
      if (first === undefined) throw new Unwritable(); // `[]` matches nothing
      return first;
    }
    const body = this.pattern.slice(start, this.at - 1);
    const excluded = patternRegExp(`[${body}]`, '');
    const allowed = [...CANDIDATES].find((candidate) => !excluded.test(candidate));
    if (allowed === undefined) throw new Unwritable();
    return allowed;
  }
}

/** A string `pattern` matches, or undefined when the walk cannot write one. */
export function sampleFromPattern(pattern: string): string | undefined {
  try {
    const value = new Walker(pattern).run();
    return patternRegExp(pattern, 'u').test(value) ? value : undefined;
  } catch {
    return undefined;
  }
}
