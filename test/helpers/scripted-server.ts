import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach } from 'vitest'

/** What the server does with one request. */
export type Scripted =
  | {
    status: number, body?: unknown, headers?: Record<string, string>, delayMs?: number
    /** Send the body one byte every `trickleMs`: a stalled service or link. */
    trickleMs?: number
    /** Send the body this many times over, as fast as the client reads: a flood. */
    repeat?: number
  }
  | { reset: true }

export interface Received { method: string, url: string, headers: IncomingMessage['headers'], body: string, at: number }

/**
 * A real HTTP server on an ephemeral loopback port that answers from a script, one entry per
 * request (the last repeats), and records what it received: a peer for the HTTP core's tests.
 */
export class ScriptedServer {
  readonly received: Received[] = []
  /** Body bytes handed to the socket, all answers together. */
  written = 0
  private readonly server: Server
  private script: Scripted[] = []

  constructor () {
    this.server = createServer((req, res) => {
      let body = ''
      req.setEncoding('utf8')
      req.on('data', (chunk: string) => { body += chunk })
      req.on('end', () => {
        this.received.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body, at: Date.now() })
        const step = (this.script.length > 1 ? this.script.shift() : this.script[0]) ?? { status: 200, body: {} }
        if ('reset' in step) {
          req.socket.destroy()
          return
        }
        setTimeout(() => {
          res.writeHead(step.status, { 'content-type': 'application/json', ...step.headers })
          const body = Buffer.from(typeof step.body === 'string' ? step.body : JSON.stringify(step.body ?? {}))
          if (step.trickleMs !== undefined) { this.trickle(res, body, step.trickleMs); return }
          this.pump(res, body, step.repeat ?? 1)
        }, step.delayMs ?? 0)
      })
    })
    servers.push(this)
  }

  private trickle (res: ServerResponse, body: Buffer, everyMs: number): void {
    let at = 0
    const timer = setInterval(() => {
      if (at >= body.byteLength) { clearInterval(timer); res.end(); return }
      this.written++
      res.write(body.subarray(at, ++at))
    }, everyMs)
    res.on('close', () => { clearInterval(timer) })
  }

  private pump (res: ServerResponse, body: Buffer, times: number): void {
    let sent = 0
    const more = (): void => {
      while (sent < times && !res.destroyed) {
        sent++
        this.written += body.byteLength
        if (!res.write(body)) { res.once('drain', more); return }
      }
      if (!res.destroyed) res.end()
    }
    more()
  }

  get url (): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`
  }

  answer (...script: Scripted[]): this {
    this.script = script
    return this
  }

  async listen (): Promise<this> {
    await new Promise<void>(resolve => this.server.listen(0, '127.0.0.1', resolve))
    return this
  }

  async close (): Promise<void> {
    this.server.closeAllConnections()
    await new Promise<void>(resolve => this.server.close(() => resolve()))
  }
}

const servers: ScriptedServer[] = []
afterEach(async () => { for (const s of servers.splice(0)) await s.close() })
