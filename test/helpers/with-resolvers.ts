/**
 * `Promise.withResolvers`, which Helia and libp2p call and Node 20 lacks (22 has it). Imported
 * first by a test that loads them, before any of their modules runs.
 */
interface Resolvers<T> { promise: Promise<T>, resolve: (value: T | PromiseLike<T>) => void, reject: (reason?: unknown) => void }

const withResolvers = function <T> (): Resolvers<T> {
  let resolve!: Resolvers<T>['resolve']
  let reject!: Resolvers<T>['reject']
  const promise = new Promise<T>((yes, no) => { resolve = yes; reject = no })
  return { promise, resolve, reject }
}

if (typeof (Promise as unknown as { withResolvers?: unknown }).withResolvers !== 'function') {
  Object.defineProperty(Promise, 'withResolvers', { value: withResolvers, writable: true, configurable: true })
}
