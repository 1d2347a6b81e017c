// The CI's closing lines, from vitest's JSON report: the counts, every test that skipped and why it
// could (a tool the machine lacks), and a failure for a skip not listed in .ci/expected-skips: a test
// that stops running for want of something must be noticed, never pass as green.
import { readFileSync } from 'node:fs'

const report = JSON.parse(readFileSync(process.argv[2], 'utf8'))
const expected = readFileSync(new URL('expected-skips', import.meta.url), 'utf8')
  .split('\n').map(line => line.trim()).filter(line => line !== '' && !line.startsWith('#'))
const skipped = report.testResults.flatMap(file => file.assertionResults
  .filter(test => test.status === 'skipped' || test.status === 'pending' || test.status === 'todo')
  .map(test => `${file.name.slice(file.name.indexOf('/test/') + 1)} > ${test.fullName}`))
console.log(`${report.numPassedTests} passed, ${report.numFailedTests} failed, ${report.numPendingTests + report.numTodoTests} skipped`)
const unexpected = skipped.filter(name => !expected.some(pattern => name.includes(pattern)))
for (const name of skipped) console.log(`skipped: ${name}${unexpected.includes(name) ? '  (UNEXPECTED)' : ''}`)
if (unexpected.length > 0) {
  console.log(`${unexpected.length} test(s) skipped that should run here: install what they need in .ci/run, or list them in .ci/expected-skips with why`)
  process.exit(1)
}
