// The CI's lines after each suite, from vitest's JSON report: the counts, and every test that
// skipped. A skip could be fair (a tool the machine lacks). One not listed in .ci/expected-skips
// fails the run: a test that stops running for want of something must be noticed, never pass as green.
import { readFileSync } from 'node:fs'

const report = JSON.parse(readFileSync(process.argv[2], 'utf8'))
// Which suite the report is from (fast or slow), for the lines below.
const suite = process.argv[3] ?? 'tests'
const expected = readFileSync(new URL('expected-skips', import.meta.url), 'utf8')
  .split('\n').map(line => line.trim()).filter(line => line !== '' && !line.startsWith('#'))
const skipped = report.testResults.flatMap(file => file.assertionResults
  .filter(test => test.status === 'skipped' || test.status === 'pending' || test.status === 'todo')
  .map(test => `${file.name.slice(file.name.indexOf('/test/') + 1)} > ${test.fullName}`))
console.log(`${suite}: ${report.numPassedTests} passed, ${report.numFailedTests} failed, ${report.numPendingTests + report.numTodoTests} skipped`)
// A suite that ran nothing was named wrong or lost its files: never a green run.
if (report.numTotalTests === 0) {
  console.log(`${suite}: no test ran: check the suite's files in test/slow-files.ts and vitest.config.ts`)
  process.exit(1)
}
const unexpected = skipped.filter(name => !expected.some(pattern => name.includes(pattern)))
for (const name of skipped) console.log(`skipped: ${name}${unexpected.includes(name) ? '  (UNEXPECTED)' : ''}`)
if (unexpected.length > 0) {
  console.log(`${unexpected.length} test(s) skipped that should run here: install what they need in .ci/run, or list them in .ci/expected-skips with why`)
  process.exit(1)
}
