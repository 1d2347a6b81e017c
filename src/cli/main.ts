#!/usr/bin/env node
import { CommanderError } from 'commander'
import { createProgram } from './program.js'
import { exitCodeOf } from '../errors.js'
import { exitCodeOfCommander, reportError } from './run.js'

try {
  await createProgram().parseAsync(process.argv)
} catch (err) {
  if (err instanceof CommanderError) {
    process.exitCode = exitCodeOfCommander(err)
  } else {
    reportError(err)
    process.exitCode = exitCodeOf(err)
  }
}
