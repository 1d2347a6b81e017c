/**
 * What to do about a skipped path, by its reason code: only some are fixed by permissions, some
 * are never retried. Status, `cidsync snapshot` and the dashboard all say it in these words.
 */
export function skippedAdvice (reason: string, kind: 'file' | 'dir'): string {
  const it = kind === 'dir' ? 'the directory' : 'the file'
  switch (reason) {
    case 'ERR_SYMLINK_NOT_FOLLOWED': return 'a symbolic link, not followed: set follow_symlinks = true for the folder to index what it points to, or ignore it'
    case 'ERR_SPECIAL_FILE': return 'a FIFO, socket or device: it has no content to index, store or restore (not retried; ignore it to leave this list)'
    case 'ERR_NAME_NOT_UTF8': return 'its name is not valid UTF-8: rename it to index it (not retried; the renamed file is picked up without a restart)'
    case 'EACCES':
    case 'EPERM': return `${it} cannot be read: fix its permissions, it is picked up without a restart`
    case 'ERR_FILE_CHANGED': return `${it} changes every time it is read (written nonstop): it is indexed once it holds still; add an ignore rule for it if it never does`
    case 'ENAMETOOLONG': return 'its path is too long for the system: shorten it or its folders\' names'
    case 'ELOOP': return 'too many symbolic links lead to it (a loop?): fix the links'
    case 'EMFILE':
    case 'ENFILE': return 'too many open files: raise the limit (`ulimit -n`, or LimitNOFILE= in the unit); it is retried'
    case 'EIO': return `the disk could not read ${it} (I/O error): check the disk; it is retried`
    default: return `${it} could not be read (${reason}): it is retried with back-off, and picked up without a restart once it can be`
  }
}
