import { describe, it, expect } from 'vitest'
import { EventBus } from '../../src/daemon/index.js'

describe('the event bus', () => {
  it('numbers events from 1 and frames each once as SSE', () => {
    const bus = new EventBus(10)
    const seen: number[] = []
    bus.subscribe(event => seen.push(event.id))
    const first = bus.emit('index.batch', { rows: 3 })
    bus.emit('publish.started', { reason: 'request' })
    expect(seen).toEqual([1, 2])
    expect(first.frame).toMatch(/^id: 1\nevent: index\.batch\ndata: \{"at":"[^"]+","rows":3\}\n\n$/)
  })

  it('resumes after an id from the ring, and names a gap it cannot fill', () => {
    const bus = new EventBus(5)
    for (let i = 0; i < 12; i++) bus.emit('index.batch', { rows: i })
    expect(bus.since(9)).toEqual({ events: [expect.objectContaining({ id: 10 }), expect.objectContaining({ id: 11 }), expect.objectContaining({ id: 12 })] })
    expect(bus.since(7)).toEqual({ events: expect.arrayContaining([expect.objectContaining({ id: 8 })]) })
    expect(bus.since(12)).toEqual({ events: [] })
    expect(bus.since(3)).toEqual({ gap: expect.stringContaining('events 4 to 7 are no longer kept') })
    expect(bus.since(40)).toEqual({ gap: expect.stringContaining('before the daemon restarted') })
  })

  it('cuts long text, so the ring stays bounded', () => {
    const bus = new EventBus(3)
    const event = bus.emit('error', { message: 'x'.repeat(100_000) })
    expect(event.frame.length).toBeLessThan(2_200)
  })

  it('keeps telling others when a subscriber throws', () => {
    const bus = new EventBus()
    let told = 0
    bus.subscribe(() => { throw new Error('broken consumer') })
    bus.subscribe(() => { told++ })
    bus.emit('deals', { pending: 1 })
    expect(told).toBe(1)
  })
})
