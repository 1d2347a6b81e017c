import { describe, expect, it } from 'vitest'
import { restorableHint } from '../../src/cli/commands/restore.js'
import { partOf } from '../../src/cli/format.js'

describe('what restore and verify say of stored files', () => {
  it('writes both counts of a large index the same way', () => {
    // Seen: "it lists 3,009 files, not their bytes; 3009 of them have their content stored".
    expect(restorableHint(3009, 3009)).toBe('it lists 3,009 files, not their bytes; 3,009 of them have their content stored: `cidsync restore --files [--to DIR]` brings them back')
    expect(restorableHint(1, 1)).toBe('it lists 1 file, not its bytes; 1 of them has its content stored: `cidsync restore --files [--to DIR]` brings it back')
    expect(restorableHint(12_000, 0)).toMatch(/^it lists 12,000 files; none has its content stored/)
    // Restored from a mirror or a directory, with the primary gone: the files come from there too.
    expect(restorableHint(5, 5, 'usb')).toContain('`cidsync restore --files --from usb [--to DIR]` brings them back')
    expect(restorableHint(5, 5, '/media/my usb/cidsync')).toContain(`\`cidsync restore --files --from '/media/my usb/cidsync' [--to DIR]\``)
    // The config the run read, repeated: pasted, the hint reads the same one.
    expect(restorableHint(5, 5, 'usb', 'my c.toml')).toContain("`cidsync restore --files --config 'my c.toml' --from usb [--to DIR]`")
    // Seen from verify --content: "3008 of 3,008 stored files brought back and verified".
    expect(partOf(3008, 3008, 'stored file', 'stored files')).toBe('3,008 of 3,008 stored files')
    expect(partOf(0, 1, 'stored file', 'stored files')).toBe('0 of 1 stored file')
  })
})
