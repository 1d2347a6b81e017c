import { describe, expect, it } from 'vitest'
import { describeErrorBody } from '../../src/remote/body.js'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'

type Service = Awaited<ReturnType<typeof localServiceUnderTest>>

async function ask (service: Service, path: string, init: { method?: string, auth?: boolean } = {}): Promise<{ status: number, body: unknown, text: string }> {
  const headers: Record<string, string> = init.auth === false ? {} : { authorization: `Bearer ${service.apiKey}` }
  const form = new FormData()
  form.append('file', new Blob(['x']), 'x.txt')
  const response = await fetch(`${service.local.url}${path}`, { method: init.method ?? 'POST', headers, ...(init.method === 'GET' ? {} : { body: form }) })
  const text = await response.text()
  return { status: response.status, body: JSON.parse(text) as unknown, text }
}

describe.skipIf(EXTERNAL)('errors on the Kubo RPC routes', () => {
  it('carry Kubo\'s Message, Code and Type, and the error field this service\'s own clients read', async () => {
    const service = await localServiceUnderTest()
    const refused = await ask(service, '/api/v0/add?hash=blake2b-256')
    const message = 'hash=blake2b-256 is not implemented by this service: only hash=sha2-256'
    expect(refused).toMatchObject({ status: 400, body: { Message: message, Code: 1, Type: 'error', error: message } })
    expect(describeErrorBody(refused.text)).toBe(message)
    expect(await ask(service, '/api/v0/dag/import?frobnicate=1')).toMatchObject({ status: 400, body: { Message: 'parameter frobnicate is not implemented by this service', Code: 1, Type: 'error' } })
    expect(await ask(service, '/api/v0/add', { auth: false })).toMatchObject({ status: 401, body: { Message: 'Authentication failed', Code: 5, Type: 'error', error: 'Authentication failed' } })
    expect(await ask(service, '/api/v0/version')).toMatchObject({ status: 404, body: { Message: 'not found: /api/v0/version', Code: 3, Type: 'error' } })
    expect(await ask(service, '/api/v0/add', { method: 'GET' })).toMatchObject({ status: 405, body: { Message: 'method GET not allowed', Code: 1, Type: 'error' } })
  })

  it('leave the other routes\' errors as production words them', async () => {
    const service = await localServiceUnderTest()
    expect(await ask(service, '/api/ipns/get_ipns_records', { method: 'GET', auth: false })).toEqual(expect.objectContaining({ status: 401, body: { error: 'Authentication failed' } }))
  })
})
