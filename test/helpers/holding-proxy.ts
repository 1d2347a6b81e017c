import { createServer, request, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach } from 'vitest'

/** One request the proxy passed on: its method, path, and query (`?a=b`, or ''). */
export interface Passed { readonly method: string, readonly path: string, readonly search: string }

/** Decides, from the requests passed so far, whether to hold this one. */
export type HoldWhen = (request: Passed, before: readonly Passed[]) => boolean

const open: HoldingProxy[] = []
afterEach(async () => {
  for (const proxy of open.splice(0)) await proxy.close()
})

/**
 * A real HTTP proxy on a loopback port in front of a service: it passes every request on, except
 * the first one a rule picks, which it holds until the test lets it go. So a test can stop a
 * process at an exact step (between two of its calls) while another process runs.
 */
export class HoldingProxy {
  readonly passed: Passed[] = []
  private readonly server: Server
  private rule: HoldWhen | undefined
  private release: (() => void) | undefined
  private holding: Promise<void> | undefined
  private noteHeld: (() => void) | undefined
  private refusal: { readonly rule: HoldWhen, readonly status: number, readonly body: unknown } | undefined

  private constructor (private readonly target: URL) {
    this.server = createServer((req, res) => { this.pass(req, res) })
  }

  static async start (target: string): Promise<HoldingProxy> {
    const proxy = new HoldingProxy(new URL(target))
    await new Promise<void>(resolve => proxy.server.listen(0, '127.0.0.1', resolve))
    open.push(proxy)
    return proxy
  }

  get url (): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`
  }

  /** Holds the first request `rule` picks from now on; answers a promise that settles once one is held. */
  holdWhen (rule: HoldWhen): Promise<void> {
    this.rule = rule
    this.holding = new Promise<void>(resolve => { this.noteHeld = resolve })
    return this.holding
  }

  /** Answers every request `rule` picks with `status` and `body` (JSON) itself, as a service refusing them would. */
  refuseWhen (rule: HoldWhen, status: number, body: unknown): void {
    this.refusal = { rule, status, body }
  }

  /** Lets the held request go on; a rule set since still holds the next it picks. */
  letGo (): void {
    this.release?.()
    this.release = undefined
  }

  async close (): Promise<void> {
    this.rule = undefined
    this.letGo()
    this.server.closeAllConnections()
    await new Promise<void>(resolve => this.server.close(() => resolve()))
  }

  private pass (req: IncomingMessage, res: import('node:http').ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://x')
    const passed = { method: req.method ?? '', path: url.pathname, search: url.search }
    const hold = this.rule?.(passed, this.passed) === true
    const refused = this.refusal?.rule(passed, this.passed) === true ? this.refusal : undefined
    this.passed.push(passed)
    if (refused !== undefined) {
      req.resume()
      res.writeHead(refused.status, { 'content-type': 'application/json' })
      res.end(JSON.stringify(refused.body))
      return
    }
    const forward = (): void => {
      const upstream = request({ host: this.target.hostname, port: this.target.port, method: req.method, path: req.url, headers: { ...req.headers, host: this.target.host } }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers)
        answer.pipe(res)
      })
      upstream.on('error', () => { res.destroy() })
      req.pipe(upstream)
    }
    if (!hold) { forward(); return }
    this.rule = undefined
    req.pause()
    this.release = () => { req.resume(); forward() }
    this.noteHeld?.()
  }
}
