/**
 * A least-recently-used map bounded by an estimate of the bytes its values hold (not by count: cached answers range
 * from a few hundred bytes to megabytes). A Map keeps insertion order, so re-inserting on use makes the first key
 * the least recently used one.
 */
export class ByteLru<V> {
  private readonly items = new Map<string, { value: V; bytes: number }>();
  private total = 0;

  /**
   * @param maxBytes the budget of all values together;
   * @param maxItemBytes values larger than this are not kept at all, so one huge value cannot flush everything.
   */
  constructor(
    readonly maxBytes: number,
    readonly maxItemBytes: number = Math.floor(maxBytes / 8),
  ) {}

  get size(): number {
    return this.items.size;
  }

  get bytes(): number {
    return this.total;
  }

  /** The value, marked most recently used. */
  get(key: string): V | undefined {
    const item = this.items.get(key);
    if (item === undefined) return undefined;
    this.items.delete(key);
    this.items.set(key, item);
    return item.value;
  }

  has(key: string): boolean {
    return this.items.has(key);
  }

  set(key: string, value: V, bytes: number): void {
    this.delete(key);
    if (bytes > this.maxItemBytes || bytes > this.maxBytes) return;
    this.items.set(key, { value, bytes });
    this.total += bytes;
    while (this.total > this.maxBytes) {
      const oldest = this.items.keys().next().value as string;
      this.delete(oldest);
    }
  }

  delete(key: string): boolean {
    const item = this.items.get(key);
    if (item === undefined) return false;
    this.items.delete(key);
    this.total -= item.bytes;
    return true;
  }

  /** Drop every entry the predicate accepts (invalidation, retention); returns how many went. */
  deleteWhere(predicate: (key: string, value: V) => boolean): number {
    let dropped = 0;
    for (const [key, item] of this.items) {
      if (predicate(key, item.value)) {
        this.items.delete(key);
        this.total -= item.bytes;
        dropped += 1;
      }
    }
    return dropped;
  }

  clear(): void {
    this.items.clear();
    this.total = 0;
  }
}
