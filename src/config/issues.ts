import type { z } from 'zod'
import { configFileSchema } from './schema.js'

type Path = ReadonlyArray<PropertyKey>

/** `folders[1].name` from `['folders', 1, 'name']`. */
export function dottedKey (path: Path): string {
  let key = ''
  for (const part of path) {
    key += typeof part === 'number' ? `[${part}]` : `${key === '' ? '' : '.'}${keyPart(String(part))}`
  }
  return key
}

/**
 * A key as TOML writes it: bare when it may be, else quoted with its escapes. A quoted key may hold
 * any character: a newline shown raw would start a line of the file's own choosing.
 */
function keyPart (part: string): string {
  return /^[A-Za-z0-9_-]+$/.test(part) ? part : JSON.stringify(part)
}

function valueAt (root: unknown, path: Path): unknown {
  let value = root
  for (const part of path) {
    if (typeof value !== 'object' || value === null) return undefined
    value = (value as Record<PropertyKey, unknown>)[part]
  }
  return value
}

interface SchemaDef { type: string, innerType?: ZodLike, element?: ZodLike, shape?: Record<string, ZodLike>, in?: ZodLike }
interface ZodLike { _zod: { def: SchemaDef } }

/** The keys an object in the schema allows at `path`, to list beside an unknown one. */
function allowedKeysAt (path: Path): string[] {
  let schema: ZodLike | undefined = configFileSchema as unknown as ZodLike
  const unwrap = (s: ZodLike | undefined): ZodLike | undefined => {
    while (s !== undefined && ['default', 'prefault', 'optional', 'nullable', 'pipe'].includes(s._zod.def.type)) {
      s = s._zod.def.innerType ?? s._zod.def.in
    }
    return s
  }
  for (const part of path) {
    schema = unwrap(schema)
    if (schema === undefined) return []
    schema = typeof part === 'number' ? schema._zod.def.element : schema._zod.def.shape?.[String(part)]
  }
  return Object.keys(unwrap(schema)?._zod.def.shape ?? {})
}

/** zod's type names as a config's reader says them. */
const TYPE_NAMES: Record<string, string> = { array: 'a list', object: 'a table', int: 'a whole number', number: 'a number', boolean: 'true or false', string: 'a string' }

function describeProblem (issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case 'invalid_value':
      return `expected one of ${issue.values.map(v => JSON.stringify(v)).join(', ')}`
    case 'invalid_type':
      return `expected ${TYPE_NAMES[issue.expected] ?? `a ${issue.expected}`}`
    case 'invalid_union': {
      // Each form the value may take, as its own first problem says it: "expected X or Y".
      const form = (first: z.core.$ZodIssue): string => first.code === 'invalid_value' && first.values.length === 1 ? JSON.stringify(first.values[0]) : describeProblem(first).replace(/^expected /, '')
      const forms = [...new Set(issue.errors.map(branch => branch[0] === undefined ? '' : form(branch[0])))].filter(f => f !== '')
      return forms.length > 0 ? `expected ${forms.join(' or ')}` : issue.message
    }
    case 'too_small':
      return issue.origin === 'string' ? 'expected a non-empty value' : `expected at least ${String(issue.minimum)}`
    case 'too_big':
      return `expected at most ${String(issue.maximum)}${issue.origin === 'string' ? ' characters' : ''}`
    default:
      return issue.message
  }
}

/**
 * One line per problem, each naming the key, the value, what is allowed, and where the value came
 * from (the file or an environment variable).
 */
export function formatIssues (issues: z.core.$ZodIssue[], input: unknown, origin: (key: string) => string): string[] {
  return issues.map(issue => {
    if (issue.code === 'unrecognized_keys') {
      const allowed = allowedKeysAt(issue.path)
      return issue.keys.map(k => {
        const key = dottedKey([...issue.path, k])
        return `unknown key ${key} ${origin(key)}: allowed keys here are ${allowed.join(', ')}`
      }).join('\n')
    }
    const key = dottedKey(issue.path)
    const value = valueAt(input, issue.path)
    const shown = value === undefined ? '(missing)' : JSON.stringify(value)
    return `${key === '' ? '(top level)' : key} = ${shown} ${origin(key)}: ${describeProblem(issue)}`
  })
}
