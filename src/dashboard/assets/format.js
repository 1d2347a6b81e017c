// How the dashboard shows things: elements made from text only, sizes and counts as the CLI writes
// them, times in UTC as the CLI prints them (the browser's local time in a tooltip), names neutralised.
'use strict'

function $ (selector) { return document.querySelector(selector) }

/** An element with attributes and children (strings become text nodes: never markup). */
function el (tag, attrs, ...children) {
  const node = document.createElement(tag)
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue
    if (key === 'class') node.className = value
    else node.setAttribute(key, String(value))
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue
    node.append(child instanceof Node ? child : document.createTextNode(String(child)))
  }
  return node
}

/** Sizes as the CLI shows them (src/util/format-bytes.ts; the browser test holds the two together). */
function bytes (n) {
  if (typeof n !== 'number') return '–'
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB']
  let i = 0
  let v = n
  while (Math.abs(v) >= 1024 && i < units.length - 1) { v /= 1024; i++ }
  return `${i === 0 ? v : Number(v.toFixed(1))} ${units[i]}`
}

function count (n) { return typeof n === 'number' ? n.toLocaleString('en') : '–' }
/** `1 segment`, `2 segments`: a count with its noun. */
function counted (n, one, many) { return `${count(n)} ${n === 1 ? one : many}` }

// As src/cli/safe-text.ts: controls, bidi overrides and line separators, each shown as an escape.
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/gu

/** A name from outside (a path on disk) with every control and bidi character shown visibly. */
function safe (text) {
  return String(text).replace(UNSAFE, c => {
    const code = c.codePointAt(0)
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`
  })
}

/** `2026-05-01 10:00:00Z`: a time in UTC, to the second, as the CLI and the finder show it. */
function utc (iso) {
  const t = new Date(iso)
  return Number.isNaN(t.getTime()) ? String(iso) : t.toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z')
}

/** This browser's own reading of a time, for a tooltip. */
function localTime (t) {
  return `your time: ${t.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'long' })}`
}

function when (iso) {
  if (!iso) return '–'
  const t = new Date(iso)
  const ago = (Date.now() - t.getTime()) / 1000
  const span = Math.abs(ago)
  const amount = span < 60 ? `${Math.round(span)} s` : span < 3600 ? `${Math.round(span / 60)} min` : span < 86400 ? `${Math.round(span / 3600)} h` : `${Math.round(span / 86400)} d`
  const rel = ago < 0 ? `in ${amount}` : `${amount} ago`
  return el('time', { datetime: iso, title: localTime(t) }, `${utc(iso)} (${rel})`)
}

/** `14:03:07Z`: when an event happened, in UTC. */
function clock (iso) {
  const t = iso ? new Date(iso) : new Date()
  return el('time', { datetime: t.toISOString(), class: 'muted', title: localTime(t) }, `${t.toISOString().slice(11, 19)}Z`)
}

/** Text with each ISO time in it shown as {@link when} shows one. */
function withTimes (text) {
  const parts = []
  let at = 0
  for (const m of String(text).matchAll(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z/g)) {
    parts.push(text.slice(at, m.index), when(m[0]))
    at = m.index + m[0].length
  }
  parts.push(String(text).slice(at))
  return parts
}

function shortCid (cid) { return cid ? el('span', { class: 'cid', title: cid }, cid.length > 20 ? `${cid.slice(0, 10)}…${cid.slice(-8)}` : cid) : '–' }

function defs (target, rows) {
  target.replaceChildren(...rows.filter(Boolean).flatMap(([term, value]) => [el('dt', {}, term), el('dd', {}, value)]))
}
