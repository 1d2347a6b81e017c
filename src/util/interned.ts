/**
 * One copy of each string many rows repeat (a device id, a folder, an owner's name), instead of
 * one a row: SQLite hands back a new string for every value it reads. Bounded: past `max` strings
 * it starts again, and a string not held is answered as it is.
 */
export class Interned {
  private readonly held = new Map<string, string>()

  constructor (private readonly max = 4096) {}

  /** `value`, or the equal string already held. */
  of<T extends string | null> (value: T): T {
    if (value === null) return value
    const known = this.held.get(value)
    if (known !== undefined) return known as T
    if (this.held.size >= this.max) this.held.clear()
    this.held.set(value, value)
    return value
  }
}
