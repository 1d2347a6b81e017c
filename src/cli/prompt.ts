/**
 * Reads one line from the terminal without echoing it (a key, a passphrase). Ctrl-C ends the
 * command (exit 130), as it would anywhere else. Only for a TTY: callers read piped input plainly.
 */
export async function readSecretLine (question: string): Promise<string> {
  const stdin = process.stdin
  // Echo off before the question shows: a key typed (or pasted) the moment it appears is never echoed.
  stdin.setRawMode(true)
  process.stderr.write(question)
  stdin.resume()
  try {
    return await new Promise<string>((resolve) => {
      let line = ''
      const onData = (chunk: Buffer): void => {
        for (const char of chunk.toString('utf8')) {
          if (char === '\r' || char === '\n') {
            stdin.off('data', onData)
            resolve(line)
            return
          }
          if (char === '\u0003') {
            process.stderr.write('\n')
            process.exit(130)
          }
          if (char === '\u007f' || char === '\b') line = line.slice(0, -1)
          else if (char >= ' ') line += char
        }
      }
      stdin.on('data', onData)
    })
  } finally {
    stdin.setRawMode(false)
    stdin.pause()
    process.stderr.write('\n')
  }
}
