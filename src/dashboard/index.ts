/**
 * The dashboard's page: plain HTML, CSS and a few scripts, shipped as files beside this module
 * (`npm run build` copies `assets/` into dist/). No framework, nothing fetched from elsewhere.
 */
import { readFileSync } from 'node:fs'

export interface DashboardAsset { readonly body: Buffer, readonly type: string }

/** URL path → file in assets/. */
const FILES: Record<string, { file: string, type: string }> = {
  '/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/dashboard/app.js': { file: 'app.js', type: 'text/javascript; charset=utf-8' },
  '/dashboard/events.js': { file: 'events.js', type: 'text/javascript; charset=utf-8' },
  '/dashboard/format.js': { file: 'format.js', type: 'text/javascript; charset=utf-8' },
  '/dashboard/glance.js': { file: 'glance.js', type: 'text/javascript; charset=utf-8' },
  '/dashboard/skipped.js': { file: 'skipped.js', type: 'text/javascript; charset=utf-8' },
  '/dashboard/find.js': { file: 'find.js', type: 'text/javascript; charset=utf-8' },
  '/dashboard/mirrors.js': { file: 'mirrors.js', type: 'text/javascript; charset=utf-8' },
  '/dashboard/retention.js': { file: 'retention.js', type: 'text/javascript; charset=utf-8' },
  '/dashboard/style.css': { file: 'style.css', type: 'text/css; charset=utf-8' }
}

const loaded = new Map<string, DashboardAsset>()

/** The asset served at `path`, read once; undefined for any other path. */
export function dashboardAsset (path: string): DashboardAsset | undefined {
  const known = FILES[path]
  if (known === undefined) return undefined
  let asset = loaded.get(path)
  if (asset === undefined) {
    asset = { body: readFileSync(new URL(`./assets/${known.file}`, import.meta.url)), type: known.type }
    loaded.set(path, asset)
  }
  return asset
}

/**
 * What the page may do: its own script and style, requests to its own origin, nothing inline,
 * never framed (clickjacking the buttons).
 */
export const DASHBOARD_CSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
