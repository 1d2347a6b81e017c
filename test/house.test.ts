import { describe, expect, it } from 'vitest'
import { access, readFile, readdir } from 'node:fs/promises'
import { dirname, join, normalize, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import picomatch from 'picomatch'
import config from '../vitest.config.js'
import { SLOW_FILES } from './slow-files.js'

const SRC = fileURLToPath(new URL('../src', import.meta.url))

/** Every module under src/ with the modules of src/ it imports (static and lazy), as paths relative to src/. */
async function imports (): Promise<Map<string, string[]>> {
  const files = (await readdir(SRC, { recursive: true })).filter(f => f.endsWith('.ts'))
  const graph = new Map<string, string[]>()
  for (const file of files) {
    const text = await readFile(join(SRC, file), 'utf8')
    const targets = [...text.matchAll(/(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+)'/g)]
      .map(m => relative(SRC, normalize(join(SRC, dirname(file), m[1] as string))).replace(/\.js$/, '.ts'))
    graph.set(file, targets)
  }
  return graph
}

const roomOf = (file: string): string => file.includes('/') ? file.slice(0, file.indexOf('/')) : file

describe('the house', () => {
  it('has no import cycles between files', async () => {
    const graph = await imports()
    const state = new Map<string, 'open' | 'done'>()
    const cycles: string[] = []
    const visit = (file: string, path: string[]): void => {
      if (state.get(file) === 'done') return
      if (state.get(file) === 'open') { cycles.push([...path.slice(path.indexOf(file)), file].join(' -> ')); return }
      state.set(file, 'open')
      for (const next of graph.get(file) ?? []) visit(next, [...path, file])
      state.set(file, 'done')
    }
    for (const file of graph.keys()) visit(file, [])
    expect(cycles).toEqual([])
  })

  it('has rooms that use each other through their face (index.ts) only', async () => {
    const graph = await imports()
    // util/ is shared pieces, not a room; config reads the profile names alone so that loading a config does not load the CID machinery.
    // index/ reads the state dir's file names alone: a thread that opens the index does not load the config's schema.
    const allowed = (file: string, target: string): boolean =>
      roomOf(target) === 'util' || !target.includes('/') || target.endsWith('/index.ts') || (file.startsWith('config/') && target === 'content/profiles.ts') ||
      (file.startsWith('index/') && target === 'config/state-layout.ts')
    const reaching = [...graph].flatMap(([file, targets]) => targets
      .filter(target => roomOf(target) !== roomOf(file) && !allowed(file, target))
      .map(target => `${file} -> ${target}`))
    expect(reaching).toEqual([])
  })

  // sync/ holds sub-rooms (sync/publish/, sync/restore/...): the same rule holds between them.
  const subOf = (file: string): string | null => /^sync\/([^/]+)\//.exec(file)?.[1] ?? null

  it('has sync sub-rooms that use each other through their face only', async () => {
    const graph = await imports()
    const reaching = [...graph].filter(([file]) => file.startsWith('sync/')).flatMap(([file, targets]) => targets
      .filter(target => {
        const sub = subOf(target)
        if (target === 'sync/index.ts') return subOf(file) !== null
        return sub !== null && sub !== subOf(file) && target !== `sync/${sub}/index.ts`
      })
      .map(target => `${file} -> ${target}`))
    expect(reaching).toEqual([])
  })

  it('has no cycles between sync sub-rooms, through sync/ top files too', async () => {
    const graph = await imports()
    // A sub-room is one node; a file at the top of sync/ is a node of its own.
    const node = (file: string): string => subOf(file) ?? file
    const edges = new Map<string, Set<string>>()
    for (const [file, targets] of graph) {
      if (!file.startsWith('sync/')) continue
      for (const target of targets) {
        if (!target.startsWith('sync/') || node(target) === node(file)) continue
        edges.set(node(file), (edges.get(node(file)) ?? new Set()).add(node(target)))
      }
    }
    const state = new Map<string, 'open' | 'done'>()
    const cycles: string[] = []
    const visit = (at: string, path: string[]): void => {
      if (state.get(at) === 'done') return
      if (state.get(at) === 'open') { cycles.push([...path.slice(path.indexOf(at)), at].join(' -> ')); return }
      state.set(at, 'open')
      for (const next of edges.get(at) ?? []) visit(next, [...path, at])
      state.set(at, 'done')
    }
    for (const at of edges.keys()) visit(at, [])
    expect(cycles).toEqual([])
  })

  it('has every test file in exactly one suite: the fast one (npm test) or the slow one (npm run test:slow)', async () => {
    const suites = (config.test?.projects ?? []).map(project => {
      if (typeof project !== 'object' || !('test' in project)) throw new Error('vitest.config.ts: each suite is an inline project')
      const { name, include = [], exclude = [] } = project.test ?? {}
      const included = picomatch(include)
      const excluded = picomatch(exclude)
      return { name: String(name), holds: (file: string) => included(file) && !excluded(file) }
    })
    expect(suites.map(suite => suite.name)).toEqual(['fast', 'slow'])
    // Any name a runner could take for a test, so that a file vitest would never run is caught too.
    const files = (await readdir(fileURLToPath(new URL('.', import.meta.url)), { recursive: true }))
      .filter(file => /\.(test|spec)\.[cm]?[jt]sx?$/.test(file)).map(file => `test/${file}`)
    expect(files.length).toBeGreaterThan(100)
    const misplaced = files.map(file => ({ file, suites: suites.filter(suite => suite.holds(file)).map(suite => suite.name) }))
      .filter(({ suites }) => suites.length !== 1)
    expect(misplaced).toEqual([])
    // A name on the slow list that holds no file is a file renamed or gone: it would run fast unseen.
    expect(SLOW_FILES.filter(glob => { const matches = picomatch(glob); return !files.some(file => matches(file)) })).toEqual([])
  })

  it('has docs that name only files that exist, and invariants proved by tests that exist', async () => {
    const root = fileURLToPath(new URL('..', import.meta.url))
    // benchmarks.md is history: it names files as they were when measured.
    const docs = ['README.md', 'CONTRIBUTING.md', ...(await readdir(join(root, 'docs'))).filter(f => f.endsWith('.md') && f !== 'benchmarks.md').map(f => `docs/${f}`)]
    // A path may start at a room too (`sync/read/history.ts`): it is under src/ (or at the top: config/).
    const rooms = new Set((await readdir(SRC, { withFileTypes: true })).filter(d => d.isDirectory()).map(d => d.name))
    const gone: string[] = []
    for (const doc of docs) {
      const text = await readFile(join(root, doc), 'utf8')
      for (const [, path, first] of text.matchAll(/`(([\w-]+)\/[\w./-]+\.(?:ts|mjs|md|toml))`/g)) {
        if (first !== 'src' && first !== 'test' && !rooms.has(first as string)) continue
        const found = await Promise.all([join(root, path as string), join(SRC, path as string)].map(async at => await access(at).then(() => true, () => false)))
        if (!found.includes(true)) gone.push(`${doc}: ${path}`)
      }
    }
    expect(gone).toEqual([])
    // "Proved by `test/x.test.ts` "a test's name…"": the name is in that file, or the proof moved.
    const invariants = (await readFile(join(root, 'docs/invariants.md'), 'utf8')).replace(/\n\s+/g, ' ')
    const unproved: string[] = []
    for (const [, file, names] of invariants.matchAll(/`(test\/[^`]+\.ts)`((?:\s*"[^"]+",?)+)/g)) {
      const source = (await readFile(join(root, file as string), 'utf8').catch(() => '')).replace(/\\'/g, "'").replace(/\s+/g, ' ')
      for (const [, name] of (names as string).matchAll(/"([^"]+)"/g)) {
        if (!source.includes((name as string).replace(/…$/, '').trim())) unproved.push(`${file}: ${name}`)
      }
    }
    expect(unproved).toEqual([])
  })

  it('has no merge conflict markers left in its text', async () => {
    const root = fileURLToPath(new URL('..', import.meta.url))
    const texts = ['README.md', 'CONTRIBUTING.md', 'AGENTS.md']
    for (const dir of ['docs', 'src', 'test', 'scripts', '.ci']) {
      const names = await readdir(join(root, dir), { recursive: true }).catch(() => [])
      texts.push(...names.filter(name => /\.(md|ts|mjs|js|json|toml|sh)$/.test(name)).map(name => join(dir, name)))
    }
    const marked: string[] = []
    for (const file of texts) {
      const text = await readFile(join(root, file), 'utf8').catch(() => '')
      // A marker is at a line's start, as git writes it; a test may hold one inside a string.
      if (/^(<{7}|>{7}) /m.test(text)) marked.push(file)
    }
    expect(marked).toEqual([])
  })
})
