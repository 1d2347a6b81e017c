/**
 * A first-in first-out queue with O(1) take: `Array.shift()` is O(n), which turns 100,000 queued
 * files into seconds of copying.
 */
export class Queue<T> {
  private items: T[] = []
  private head = 0

  get length (): number {
    return this.items.length - this.head
  }

  push (item: T): void {
    this.items.push(item)
  }

  peek (): T | undefined {
    return this.items[this.head]
  }

  shift (): T | undefined {
    if (this.head >= this.items.length) return undefined
    const item = this.items[this.head] as T
    this.items[this.head] = undefined as T
    this.head++
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head)
      this.head = 0
    }
    return item
  }

  /** Takes everything, oldest first. */
  drain (): T[] {
    const all = this.items.slice(this.head)
    this.items = []
    this.head = 0
    return all
  }
}
