/** Slots already taken are dropped in one go past this many. */
const COMPACT_AT = 1024;

/**
 * A first-in first-out queue over one array and a head index: taking an item clears its
 * slot (what it held can be collected) and moves the head, and the slots behind the head
 * are dropped in one splice once there are at least `compactAt` of them and no fewer than
 * the items left (Array.shift would move every item on every take). Neither push nor take
 * allocates beyond the array's own growth. The journal writer's slot queue and its
 * session lanes are such queues.
 */
export class HeadQueue<T> {
  readonly #slots: (T | undefined)[] = [];
  #head = 0;

  constructor(readonly compactAt: number = COMPACT_AT) {}

  /** Items not taken yet. */
  get size(): number {
    return this.#slots.length - this.#head;
  }

  /** Slots the array holds, taken ones not yet dropped included: what compaction bounds. */
  get slots(): number {
    return this.#slots.length;
  }

  push(item: T): void {
    this.#slots.push(item);
  }

  /** The first item not taken yet (undefined: none). */
  peek(): T | undefined {
    return this.#slots[this.#head];
  }

  /** Takes the first item (undefined: none). */
  shift(): T | undefined {
    if (this.#head === this.#slots.length) return undefined;
    const item = this.#slots[this.#head];
    this.#slots[this.#head++] = undefined;
    if (this.#head === this.#slots.length) {
      this.#slots.length = 0;
      this.#head = 0;
    } else if (this.#head >= this.compactAt && this.#head * 2 >= this.#slots.length) {
      this.#slots.splice(0, this.#head);
      this.#head = 0;
    }
    return item;
  }

  /** Takes every item, in order. */
  takeAll(): T[] {
    const items = this.#slots.splice(this.#head) as T[];
    this.#slots.length = 0;
    this.#head = 0;
    return items;
  }

  /** The items not taken yet, in order (a live view: do not take while iterating). */
  *[Symbol.iterator](): IterableIterator<T> {
    for (let i = this.#head; i < this.#slots.length; i++) yield this.#slots[i]!;
  }
}
