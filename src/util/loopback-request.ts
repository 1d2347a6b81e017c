import { request, type Agent } from 'node:http'

/** Where a local listener is: a TCP host and port, or a unix socket. */
export type LoopbackTarget = { readonly host: string, readonly port: number } | { readonly socketPath: string }

export interface LoopbackRequestInit {
  readonly method?: 'GET' | 'POST'
  readonly headers?: Readonly<Record<string, string>>
  /** For the whole exchange: connect, headers and body. */
  readonly timeoutMs: number
  /** An answer past this is refused: it comes from outside this process. */
  readonly maxBytes: number
  /** A keep-alive agent, to send a second request over the connection of the first. Default: one connection, closed after. */
  readonly agent?: Agent
}

export interface LoopbackAnswer {
  readonly statusCode: number
  readonly headers: Readonly<Record<string, string | string[] | undefined>>
  readonly body: string
  /** Sent over a connection an earlier request of the same agent opened. */
  readonly reusedSocket: boolean
}

/** Thrown with a stable code in node's own style (errno names): shown in parentheses, as node's are. */
export class LoopbackAnswerError extends Error {
  constructor (message: string, readonly code: string) {
    super(message)
  }
}

/**
 * One request to a listener on this machine, through node's own HTTP client. The CLI asks its
 * daemon this way: node's client is in the runtime's snapshot, while undici takes a tenth of a
 * second to load. The connection is closed after the answer, unless an agent is given to keep it.
 */
export async function loopbackRequest (target: LoopbackTarget, path: string, init: LoopbackRequestInit): Promise<LoopbackAnswer> {
  const signal = AbortSignal.timeout(init.timeoutMs)
  return await new Promise<LoopbackAnswer>((resolve, reject) => {
    const where = 'socketPath' in target ? { socketPath: target.socketPath } : { host: target.host, port: target.port }
    let answered = false
    const connection = init.agent === undefined ? { headers: { ...init.headers, connection: 'close' }, agent: false as const } : { headers: { ...init.headers }, agent: init.agent }
    const req = request({ ...where, ...connection, path, method: init.method ?? 'GET', signal }, (res) => {
      answered = true
      const chunks: Buffer[] = []
      let bytes = 0
      res.on('data', (chunk: Buffer) => {
        bytes += chunk.length
        if (bytes > init.maxBytes) {
          // Settled first: the body's end may still come once the socket is torn down.
          reject(new LoopbackAnswerError(`the answer passed ${init.maxBytes} bytes`, 'EMSGSIZE'))
          res.destroy()
          return
        }
        chunks.push(chunk)
      })
      res.on('error', reject)
      // A listener that closes before the body's end: 'end' never comes.
      res.on('close', () => { if (!res.complete) reject(new LoopbackAnswerError('the answer was cut short', 'ECONNRESET')) })
      res.on('end', () => {
        resolve({ statusCode: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8'), reusedSocket: req.reusedSocket })
      })
    })
    // A 101 (or any answer that upgrades) is no answer: with no 'upgrade' listener node destroys the
    // socket and neither calls back nor fails the request, and the signal then finds nothing to end.
    req.on('upgrade', (_res, socket) => {
      socket.destroy()
      reject(new LoopbackAnswerError('the listener switched protocols instead of answering', 'EPROTO'))
    })
    // Whatever else ends the request with neither an answer nor an error still settles it.
    req.on('close', () => { if (!answered) reject(new LoopbackAnswerError('the connection closed with no answer', 'ECONNRESET')) })
    req.on('error', (err: NodeJS.ErrnoException) => {
      reject(err.name === 'AbortError' ? new LoopbackAnswerError(`no answer within ${init.timeoutMs} ms`, 'ETIMEDOUT') : err)
    })
    req.end()
  })
}
