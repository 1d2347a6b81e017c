import { describe, it, expect } from 'vitest'
import { request, type IncomingMessage } from 'node:http'
import { connect, type Socket } from 'node:net'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { DEFAULT_MAX_BUFFERED_BYTES, DEFAULT_MAX_STREAMS } from '../../src/daemon/index.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { until, within } from '../helpers/wait.js'
import { httpGet } from '../helpers/http.js'
import { startInProcessDaemon, statusOf } from '../helpers/in-process-daemon.js'

setFlagsFromString('--expose-gc')
/** A full collection, so what is measured is what is held, not garbage not yet collected. */
const gc = runInNewContext('gc') as () => void

interface Frame { id?: string, event?: string, data?: string }

/** An SSE reader over a real connection: frames as they come, closed after the test. */
async function openStream (port: number, headers: Record<string, string> = {}): Promise<{ res: IncomingMessage, frames: Frame[], close: () => void }> {
  return await new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/events', headers: { host: `127.0.0.1:${port}`, ...headers } }, res => {
      const frames: Frame[] = []
      let buffer = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => {
        buffer += chunk
        let end
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const frame: Frame = {}
          for (const line of buffer.slice(0, end).split('\n')) {
            const [key, ...rest] = line.split(': ')
            if (key === 'id' || key === 'event' || key === 'data') frame[key] = rest.join(': ')
          }
          buffer = buffer.slice(end + 2)
          if (frame.event !== undefined) frames.push(frame)
        }
      })
      resolve({ res, frames, close: () => req.destroy() })
    })
    req.on('error', reject)
    req.end()
  })
}

describe('GET /events', () => {
  it('streams named events with increasing ids: a file added gives index.batch and scan.progress', async () => {
    const dir = await useTempDir()
    const { port, notes } = await startInProcessDaemon(dir)
    const stream = await openStream(port)
    expect(stream.res.headers['content-type']).toBe('text/event-stream; charset=utf-8')
    await until(() => stream.frames.find(f => f.event === 'hello'), 5_000, 'hello')
    await writeFile(join(notes, 'new.md'), 'new')
    const batch = await until(() => stream.frames.find(f => f.event === 'index.batch'), 10_000, 'an index.batch event')
    expect(JSON.parse(batch.data ?? '')).toMatchObject({ rows: 1, at: expect.any(String) })
    expect(stream.frames.some(f => f.event === 'scan.progress')).toBe(true)
    const ids = stream.frames.filter(f => f.id !== undefined).map(f => Number(f.id))
    expect(ids).toEqual([...ids].sort((a, b) => a - b))
    expect(new Set(ids).size).toBe(ids.length)
    stream.close()
  })

  it('resumes after Last-Event-ID with every event missed, in order, and says resync for a gap', async () => {
    const dir = await useTempDir()
    const { daemon, port } = await startInProcessDaemon(dir)
    const first = await openStream(port)
    const mark = daemon.events.emit('deals', { pending: 1, overdue: 0, active: 0 })
    await until(() => first.frames.find(f => f.id === String(mark.id)), 5_000, 'the marked event')
    first.close()
    const missed = [1, 2, 3].map(n => daemon.events.emit('deals', { pending: n + 1, overdue: 0, active: 0 }).id)
    const again = await openStream(port, { 'last-event-id': String(mark.id) })
    // The daemon's own events (folder state, scan progress) may fall between ours: every missed one comes, in order.
    const got = (): number[] => again.frames.filter(f => f.id !== undefined).map(f => Number(f.id))
    await until(() => missed.every(id => got().includes(id)) ? true : undefined, 5_000, 'the missed events')
    expect(got()).toEqual([...got()].sort((x, y) => x - y))
    expect(got()[0]).toBe(mark.id + 1)
    again.close()
    const future = await openStream(port, { 'last-event-id': '999999' })
    const resync = await until(() => future.frames.find(f => f.event === 'resync'), 5_000, 'resync')
    expect(JSON.parse(resync.data ?? '').reason).toContain('before the daemon restarted')
    future.close()
  })

  it('drops a consumer that stops reading, with memory bounded while events keep coming', async () => {
    const dir = await useTempDir()
    const { daemon, port } = await startInProcessDaemon(dir)
    // A raw client that sends the request and then never reads: the kernel's buffers fill, then ours would.
    const stalled: Socket = connect(port, '127.0.0.1')
    await new Promise(resolve => stalled.once('connect', resolve))
    stalled.write(`GET /events HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`)
    stalled.pause()
    await until(async () => (await statusOf(port)).events.streams === 1 ? true : undefined, 5_000, 'the stream to open')
    const healthy = await openStream(port)
    const held = (): number => { gc(); const m = process.memoryUsage(); return m.heapUsed + m.external + m.arrayBuffers }
    const before = held()
    const payload = 'x'.repeat(1_900)
    let peak = 0
    // Up to 40 MB of events, far past what the loopback socket buffers hold: without the bound it would pile up in memory.
    for (let round = 0; round < 1_000 && daemon.status().events.dropped === 0; round++) {
      for (let i = 0; i < 20; i++) daemon.events.emit('error', { message: payload })
      // The healthy reader lives in this process too: let it read between rounds, as any reader would.
      await new Promise(resolve => setTimeout(resolve, 1))
      if (round % 25 === 0) peak = Math.max(peak, held() - before)
    }
    const status = await statusOf(port)
    expect(status.events.dropped).toBe(1)
    expect(status.events.streams).toBe(1)
    // Waiting for one stream never went past the bound and one frame; the process held the ring (1,000 events of 2 KB), not what was sent.
    expect(status.events.peakBufferedBytes).toBeLessThan(DEFAULT_MAX_BUFFERED_BYTES + 4_096)
    expect(peak).toBeLessThan(12 * 1024 * 1024)
    console.info(`stalled consumer dropped after ${status.events.lastId} events (${((status.events.lastId * 2_000) / 1048576).toFixed(0)} MB sent); at most ${status.events.peakBufferedBytes} bytes waited for one stream; memory held grew by at most ${(peak / 1048576).toFixed(1)} MiB`)
    // The one that reads kept getting events.
    const last = daemon.events.emit('deals', { pending: 0, overdue: 0, active: 0 })
    await until(() => healthy.frames.find(f => f.id === String(last.id)), 10_000, 'the healthy stream to get the last event')
    healthy.close()
    stalled.destroy()
  })

  it(`holds at most ${DEFAULT_MAX_STREAMS} streams: one more ends the oldest, so idle readers cannot keep others out`, async () => {
    const dir = await useTempDir()
    const { port, daemon } = await startInProcessDaemon(dir)
    // Readers that hold their streams and never leave.
    const idle: Array<Awaited<ReturnType<typeof openStream>>> = []
    for (let i = 0; i < DEFAULT_MAX_STREAMS; i++) idle.push(await openStream(port))
    const ended = new Promise<void>(resolve => idle[0]?.res.once('end', resolve))
    const admitted = await openStream(port)
    expect(admitted.res.statusCode).toBe(200)
    await within(ended, 5_000, 'the oldest stream to end')
    expect(idle[0]?.frames.at(-1)?.event).toBe('closed')
    expect(idle[0]?.frames.at(-1)?.data).toContain('a newer reader took this stream\'s place')
    await until(async () => (await statusOf(port)).events.streams === DEFAULT_MAX_STREAMS ? true : undefined, 5_000, 'the cap kept')
    // The newcomer gets events; the second oldest still does too.
    const sent = daemon.events.emit('deals', { pending: 7, overdue: 0, active: 0 })
    await until(() => admitted.frames.find(f => f.id === String(sent.id)), 5_000, 'the newcomer to get the event')
    await until(() => idle[1]?.frames.find(f => f.id === String(sent.id)), 5_000, 'an older reader to get it')
    for (const s of [...idle, admitted]) s.close()
  })

  it('is refused to a foreign Host or a web page of another origin', async () => {
    const dir = await useTempDir()
    const { port } = await startInProcessDaemon(dir)
    expect((await httpGet({ port }, '/events', { host: 'evil.example' })).status).toBe(403)
    expect((await httpGet({ port }, '/events', { headers: { origin: 'http://evil.example' } })).status).toBe(403)
  })
})
