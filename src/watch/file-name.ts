const strict = new TextDecoder('utf-8', { fatal: true })

/**
 * A directory entry's name read as bytes: the string when it is valid UTF-8, else undefined. A
 * name that is not UTF-8 read as a string comes back with U+FFFD in it, a path that does not
 * exist, so it would be dropped without a word.
 */
export function utf8Name (name: Buffer): string | undefined {
  try {
    return strict.decode(name)
  } catch {
    return undefined
  }
}

/**
 * A lossless printable form of a name that is not UTF-8: every valid UTF-8 sequence as itself,
 * every other byte as `\xHH`, a backslash as `\\`; so `a\xff.txt` names the bytes 61 ff 2e 74 78 74.
 */
export function printableName (name: Buffer): string {
  let out = ''
  let i = 0
  while (i < name.length) {
    const byte = name[i] as number
    const length = byte < 0x80 ? 1 : byte >= 0xc2 && byte <= 0xdf ? 2 : byte >= 0xe0 && byte <= 0xef ? 3 : byte >= 0xf0 && byte <= 0xf4 ? 4 : 0
    const text = length === 0 ? undefined : utf8Name(name.subarray(i, i + length))
    if (text === undefined || i + length > name.length) {
      out += `\\x${byte.toString(16).padStart(2, '0')}`
      i++
    } else {
      out += text === '\\' ? '\\\\' : text
      i += length
    }
  }
  return out
}
