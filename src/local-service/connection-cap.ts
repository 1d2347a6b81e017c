import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'

export const DEFAULT_SERVICE_MAX_CONNECTIONS = 128
/** A connection that has not sent a whole request head by then is closed. */
export const DEFAULT_SERVICE_HEADERS_TIMEOUT_MS = 10_000

/**
 * Bounds what a server holds for whoever connects (any local user can reach a loopback port):
 * past `max` connections the oldest one not in a request is closed to make room, or the new one
 * when every connection is busy. Without it 21,000 idle connections took every descriptor of the
 * process the embedded service shares with the daemon. Idle ones also time out (keep-alive, and
 * `headersTimeout` for a connection that never sends a request).
 */
export function capConnections (server: Server, max = DEFAULT_SERVICE_MAX_CONNECTIONS, headersTimeoutMs = DEFAULT_SERVICE_HEADERS_TIMEOUT_MS): void {
  const sockets = new Map<Socket, { busy: number }>()
  server.headersTimeout = headersTimeoutMs
  server.keepAliveTimeout = Math.min(5_000, headersTimeoutMs)
  server.on('connection', (socket: Socket) => {
    sockets.set(socket, { busy: 0 })
    socket.once('close', () => sockets.delete(socket))
    if (sockets.size <= max) return
    for (const [open, state] of sockets) {
      if (open === socket || state.busy > 0) continue
      sockets.delete(open)
      open.destroy()
      return
    }
    sockets.delete(socket)
    socket.destroy()
  })
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const state = sockets.get(req.socket)
    if (state === undefined) return
    state.busy++
    res.once('close', () => { state.busy-- })
  })
}
