// The one-glance line on top: the daemon's own sentence (status.glance), green, amber or red, and
// the one thing to do when not green. Times in it are shown as the rest of the page shows times.
'use strict'

const GLANCE_WORDS = { green: 'all good', amber: 'on its way', red: 'needs you' }

// eslint-disable-next-line no-unused-vars
function renderGlance (s) {
  const g = s.glance
  const box = $('#glance')
  box.hidden = !g
  if (!g) return
  box.dataset.level = g.level
  $('#glance .level').textContent = GLANCE_WORDS[g.level] || g.level
  $('#glance .level').className = `level badge ${g.level === 'green' ? 'ok' : g.level === 'red' ? 'bad' : 'warn'}`
  // Folder names and the service's messages come from outside: neutralised before anything else.
  $('#glance .sentence').replaceChildren(...withTimes(safe(g.sentence)))
  const todo = $('#glance .todo')
  todo.hidden = !g.todo
  todo.replaceChildren('What to do: ', ...withTimes(safe(g.todo || '')))
}
