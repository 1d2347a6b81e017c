#!/usr/bin/env node
// `cidsync`: the daemon's signals held first, then the CLI's bundle run through V8's code cache
// (code-cache.ts). Built as dist/bin/cidsync.js beside the bundle, dist/bin/cidsync-main.cjs.
import './early-signals.js'
import { fileURLToPath } from 'node:url'
import { raiseJsTieringBudget, raiseWasmTieringBudget } from '../util/tiering.js'
import { runWithCodeCache } from './code-cache.js'
import { BRIEF } from './brief.js'

// Before anything is compiled: V8 takes a cache only under the flags it was made with.
raiseWasmTieringBudget()
raiseJsTieringBudget()
// A brief command compiles next to nothing of the CLI: no cache is kept from it (the next command keeps one).
runWithCodeCache(fileURLToPath(new URL('./cidsync-main.cjs', import.meta.url)), { keep: !BRIEF.has(process.argv[2]) })
