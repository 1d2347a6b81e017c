// `npm start` and `npm test`: `npm run build`, unless dist/ is already built from the inputs as
// they are (`npm ci` has just built it). A build takes a minute on a small machine.
import { spawnSync } from 'node:child_process'
import { builtFromCurrentInputs } from './build-inputs.mjs'

if (builtFromCurrentInputs('.')) {
  process.stderr.write('dist/ is built from the current sources: not building again (`npm run build` forces it)\n')
} else {
  // The npm that runs this script, so the build runs under the same one.
  const npm = process.env.npm_execpath
  const run = npm !== undefined && npm !== '' ? spawnSync(process.execPath, [npm, 'run', 'build'], { stdio: 'inherit' }) : spawnSync('npm', ['run', 'build'], { stdio: 'inherit', shell: process.platform === 'win32' })
  if (run.error !== undefined) throw run.error
  process.exitCode = run.status ?? 1
}
