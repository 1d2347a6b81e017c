import { request } from 'node:http'

export interface HttpAnswer { status: number, headers: Record<string, string | string[] | undefined>, body: string }

/** A plain HTTP request with full control of the Host header (what a browser would send). */
export async function httpGet (target: { port?: number, socketPath?: string }, path: string, options: { host?: string, method?: string, headers?: Record<string, string> } = {}): Promise<HttpAnswer> {
  return await new Promise((resolve, reject) => {
    const req = request({
      host: '127.0.0.1', port: target.port, socketPath: target.socketPath, path, method: options.method ?? 'GET',
      headers: { host: options.host ?? `127.0.0.1:${target.port ?? 0}`, ...options.headers }, timeout: 30_000
    }, res => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => { body += chunk })
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }))
    })
    req.on('timeout', () => req.destroy(new Error(`GET ${path} timed out`)))
    req.on('error', reject)
    req.end()
  })
}
