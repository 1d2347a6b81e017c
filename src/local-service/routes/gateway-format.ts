import { HttpFailure } from '../http.js'

/**
 * What a gateway request asks for, from `?format=` and `Accept` (IPFS trustless gateway spec):
 * the file's bytes (the default, as before), one raw block, or a CAR of the DAG.
 */
export type GatewayChoice =
  | { readonly kind: 'file' }
  | { readonly kind: 'raw', readonly negotiated: boolean }
  | { readonly kind: 'car', readonly negotiated: boolean, readonly dups: boolean }

export const RAW_TYPE = 'application/vnd.ipld.raw'
export const CAR_TYPE = 'application/vnd.ipld.car'

interface MediaRange { readonly type: string, readonly params: ReadonlyMap<string, string>, readonly q: number }

/**
 * The spec's verifiable and IPLD types (and tar): asked for alone and not served, a 406, never a
 * silent file. Plain `application/json` is not among them: HTTP clients send it by habit.
 */
const IPLD_FAMILY = /^application\/(vnd\.ipld\.|vnd\.ipfs\.|x-tar$)/

/** `Accept` as RFC 9110 media ranges, in the order sent; parameters lowercased, quotes dropped. */
export function parseAccept (header: string | undefined): MediaRange[] {
  if (header === undefined || header.trim() === '') return []
  return header.slice(0, 4096).split(',').slice(0, 64).flatMap(part => {
    const [type, ...rest] = part.split(';').map(s => s.trim())
    if (type === undefined || !type.includes('/')) return []
    const params = new Map<string, string>()
    let q = 1
    for (const p of rest) {
      const eq = p.indexOf('=')
      if (eq <= 0) continue
      const name = p.slice(0, eq).trim().toLowerCase()
      const value = p.slice(eq + 1).trim().replace(/^"(.*)"$/, '$1').toLowerCase()
      if (name === 'q') {
        const n = Number(value)
        q = Number.isFinite(n) && n >= 0 && n <= 1 ? n : 0
      } else params.set(name, value)
    }
    return [{ type: type.toLowerCase(), params, q }]
  })
}

/** A CAR variant the gateway can send (version 1, DFS order, either dups), or undefined. */
function carVariant (params: ReadonlyMap<string, string>): { dups: boolean } | undefined {
  const version = params.get('version')
  const order = params.get('order')
  const dups = params.get('dups')
  if (version !== undefined && version !== '1') return undefined
  // `unk` lets the gateway pick any order: DFS is one.
  if (order !== undefined && order !== 'dfs' && order !== 'unk') return undefined
  if (dups !== undefined && dups !== 'y' && dups !== 'n') return undefined
  return { dups: dups === 'y' }
}

type Candidate = { readonly choice: GatewayChoice, readonly q: number, readonly specific: boolean }

function candidateOf (range: MediaRange): Candidate | 'unsupported' | 'other' {
  if (range.type === RAW_TYPE) return { choice: { kind: 'raw', negotiated: true }, q: range.q, specific: true }
  if (range.type === CAR_TYPE) {
    const variant = carVariant(range.params)
    return variant === undefined ? 'unsupported' : { choice: { kind: 'car', negotiated: true, dups: variant.dups }, q: range.q, specific: true }
  }
  if (range.type === 'application/octet-stream') return { choice: { kind: 'file' }, q: range.q, specific: true }
  if (range.type === '*/*' || range.type === 'application/*') return { choice: { kind: 'file' }, q: range.q, specific: false }
  return IPLD_FAMILY.test(range.type) ? 'unsupported' : 'other'
}

/** Query parameter `car-dups` (or `car-version`, `car-order`) when given: it overrides `Accept`'s. */
function carQuery (url: URL): { dups: boolean | undefined } {
  const version = url.searchParams.get('car-version')
  const order = url.searchParams.get('car-order')
  const dups = url.searchParams.get('car-dups')
  if (version !== null && version !== '1') throw new HttpFailure(400, `car-version=${version.slice(0, 20)} is not served: only CAR version 1`)
  if (order !== null && order !== 'dfs' && order !== 'unk') throw new HttpFailure(400, `car-order=${order.slice(0, 20)} is not served: use dfs or unk`)
  if (dups !== null && dups !== 'y' && dups !== 'n') throw new HttpFailure(400, `car-dups=${dups.slice(0, 20)} is not valid: use y or n`)
  return { dups: dups === null ? undefined : dups === 'y' }
}

/**
 * The response a request asks for. `format` takes precedence over `Accept` (the spec's SHOULD);
 * without either, or with only types outside IPLD (a browser's `text/html, *\/*`), the file as
 * before. `Accept` naming only IPLD types or CAR variants this gateway does not serve is a 406.
 */
export function chooseFormat (url: URL, accept: string | undefined): GatewayChoice {
  const format = url.searchParams.get('format')
  const ranges = parseAccept(accept)
  const candidates = ranges.map(candidateOf)
  const query = carQuery(url)
  if (format !== null && format !== '') {
    if (format === 'raw') return { kind: 'raw', negotiated: false }
    if (format === 'car') {
      const fromAccept = best(candidates.filter((c): c is Candidate => typeof c !== 'string' && c.choice.kind === 'car'))
      const dups = query.dups ?? (fromAccept?.choice.kind === 'car' ? fromAccept.choice.dups : false)
      return { kind: 'car', negotiated: false, dups }
    }
    throw new HttpFailure(400, `unsupported format ${format.slice(0, 20)}: use raw or car`)
  }
  const chosen = best(candidates.filter((c): c is Candidate => typeof c !== 'string'))
  if (chosen === undefined) {
    if (candidates.includes('unsupported')) throw new HttpFailure(406, `none of the types in Accept is served here: ${RAW_TYPE}, ${CAR_TYPE}; version=1; order=dfs; dups=y|n, or the file (application/octet-stream)`)
    return { kind: 'file' }
  }
  if (chosen.choice.kind === 'car' && query.dups !== undefined) return { ...chosen.choice, dups: query.dups }
  return chosen.choice
}

/** The most preferred: highest q, then a named type over a wildcard, then the first listed. */
function best (candidates: readonly Candidate[]): Candidate | undefined {
  let found: Candidate | undefined
  for (const c of candidates) {
    if (c.q <= 0) continue
    if (found === undefined || c.q > found.q || (c.q === found.q && c.specific && !found.specific)) found = c
  }
  return found
}

/** Which blocks of the DAG a CAR carries (`dag-scope`, default `all`). */
export type DagScope = 'all' | 'entity' | 'block'

/** `entity-bytes=from:to` as sent: negative numbers count from the end, `to` may be `*`. */
export interface EntityBytes { readonly from: number, readonly to: number | '*', readonly text: string }

export function parseDagScope (url: URL): DagScope {
  const scope = url.searchParams.get('dag-scope')
  if (scope === null || scope === '') return 'all'
  if (scope === 'all' || scope === 'entity' || scope === 'block') return scope
  throw new HttpFailure(400, `dag-scope=${scope.slice(0, 20)} is not valid: use all, entity or block`)
}

export function parseEntityBytes (url: URL): EntityBytes | undefined {
  const text = url.searchParams.get('entity-bytes')
  if (text === null) return undefined
  const m = /^(-?\d{1,16}):(-?\d{1,16}|\*)$/.exec(text)
  if (m === null) throw new HttpFailure(400, `entity-bytes=${text.slice(0, 40)} is not valid: use from:to (byte offsets, inclusive; negative from the end; to may be *)`)
  const from = Number(m[1])
  const to = m[2] === '*' ? '*' : Number(m[2])
  if (to !== '*' && from >= 0 && to >= 0 && to < from) throw new HttpFailure(400, `entity-bytes=${text}: to is before from`)
  return { from, to, text }
}
