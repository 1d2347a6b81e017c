import type { Command } from 'commander'

/**
 * One command as `cidsync --help` lists it, and how to load it. The listing is kept here so that
 * a run loads only the module of the command it runs (each command's module pulls in the rooms
 * it needs: config, zod, the index, the service's clients); test/cli/command-list.test.ts checks
 * every entry against what its module registers.
 */
export interface CommandEntry {
  /** The top-level command's name, as typed. */
  readonly name: string
  /** Its line in the listing: name, `[options]`, arguments (what commander's `subcommandTerm` gives). */
  readonly term: string
  /** Its description in the listing. */
  readonly description: string
  /** Its module's register function, loaded when it is run or its own help is asked for. */
  readonly load: () => Promise<(program: Command) => void>
  /** It reads every command's help (`generate`): run, it loads them all. */
  readonly loadsAll?: boolean
}

/** The commands in `--help`: by what a user does, in the order they first need them. */
export const COMMAND_GROUPS: ReadonlyArray<readonly [string, readonly CommandEntry[]]> = [
  ['Set up:', [
    { name: 'init', term: 'init [options]', description: 'write a commented config file and create the state dir', load: async () => (await import('./commands/init.js')).registerInit },
    { name: 'login', term: 'login [options]', description: 'get an API key by signing the deal service\'s message with your wallet key, and save it (0600)', load: async () => (await import('./commands/login.js')).registerLogin },
    { name: 'key', term: 'key', description: 'the snapshot encryption key: carry it to another device', load: async () => (await import('./commands/key.js')).registerKey },
    { name: 'service', term: 'service', description: 'run cidsync as a service: systemd (linux) or launchd (macOS)', load: async () => (await import('./commands/service.js')).registerService },
    { name: 'daemon', term: 'daemon [options]', description: 'run in the foreground: watch, index, serve status (the service unit\'s ExecStart)', load: async () => (await import('./commands/daemon.js')).registerDaemon },
  ]],
  ['Day to day:', [
    { name: 'status', term: 'status [options]', description: 'what the running daemon is doing, from its status endpoint', load: async () => (await import('./commands/status.js')).registerStatus },
    { name: 'dashboard', term: 'dashboard [options]', description: 'print the dashboard\'s URL with a one-time login link (works once, for two minutes) that lets this browser use its buttons', load: async () => (await import('./commands/dashboard.js')).registerDashboard },
    { name: 'ls', term: 'ls [options] [prefix]', description: 'list what the index holds: size, CID, where its content stands (local-only, queued, uploading, stored, sent-for-deal, deal-active, failed), folder/path', load: async () => (await import('./commands/ls.js')).registerLs },
    { name: 'history', term: 'history [options]', description: 'the publishes the pointer\'s chain holds, newest first: time, device, entries, bytes added, deal, CID', load: async () => (await import('./commands/history.js')).registerHistory },
    { name: 'snapshot', term: 'snapshot [options]', description: 'publish now and print the snapshot CID: through the running daemon, or on its own after catching up with the folders', load: async () => (await import('./commands/snapshot.js')).registerSnapshot },
    { name: 'rescan', term: 'rescan [options]', description: 'ask the running daemon to walk every folder afresh now and repair what the index missed (the drift check)', load: async () => (await import('./commands/rescan.js')).registerRescan },
    { name: 'reconcile', term: 'reconcile [options]', description: 'mirror the account now: every page of its uploads, its IPNS names and the deals this device asked for', load: async () => (await import('./commands/reconcile.js')).registerReconcile },
  ]],
  ['Find:', [
    { name: 'find', term: 'find [options] <pattern>', description: 'search every device\'s files by substring or glob (* and ?) over folder/path, ranked: device, size, mtime, stored state, path', load: async () => (await import('./commands/find.js')).registerFind },
    { name: 'where', term: 'where [options] <cid-or-file>', description: 'every device and path that holds a CID (or a local file\'s content, its CID computed), since when, and whether its content is stored', load: async () => (await import('./commands/where.js')).registerWhere },
    { name: 'dupes', term: 'dupes [options]', description: 'the same content at several paths or devices, most reclaimable on this device first, with the total', load: async () => (await import('./commands/dupes.js')).registerDupes },
    { name: 'log', term: 'log [options] <path>', description: 'one file\'s timeline across the history, newest first (as `cidsync history`): each version\'s time, device, size, CID, and whether it can be fetched', load: async () => (await import('./commands/log.js')).registerLog },
  ]],
  ['Restore and check:', [
    { name: 'get', term: 'get [options] <path...>', description: 'bring stored files back from the service, verified against their CIDs: into their folders, or under --to DIR', load: async () => (await import('./commands/get.js')).registerGet },
    { name: 'restore', term: 'restore [options]', description: 'install the index from the pointer (or a given CID): fetch, verify, decrypt, check, swap in. It lists the files; --files brings the files themselves back, where their content is stored', load: async () => (await import('./commands/restore.js')).registerRestore },
    { name: 'verify', term: 'verify [options]', description: 'a restore drill: fetch, verify and decrypt what a restore needs, and bring a sample of stored files back. Changes nothing', load: async () => (await import('./commands/verify.js')).registerVerify },
    { name: 'pointer', term: 'pointer', description: 'the latest snapshot CID per namespace and network, by hand', load: async () => (await import('./commands/pointer.js')).registerPointer },
  ]],
  ['Keep what matters:', [
    { name: 'forget', term: 'forget [options]', description: 'apply [retention] to the history: keep what the policy keeps, forget the rest from the chain', load: async () => (await import('./commands/forget.js')).registerForget },
    { name: 'prune', term: 'prune [options]', description: 'delete every object no kept publish needs, on the service and the mirrors, and say what it freed', load: async () => (await import('./commands/prune.js')).registerPrune },
  ]],
  ['Move out and in:', [
    { name: 'export', term: 'export [options]', description: 'write the whole history as one CAR file, which any IPFS implementation imports with the same CIDs, or into a directory store', load: async () => (await import('./commands/export.js')).registerExport },
    { name: 'import', term: 'import [options]', description: 'put a CAR file from `cidsync export` on the configured service, check it, ask for deals, and move the pointer to it', load: async () => (await import('./commands/import.js')).registerImport },
  ]],
  ['The service by hand:', [
    { name: 'files', term: 'files [options]', description: 'the account\'s uploads, every page, newest first', load: async () => (await import('./commands/files.js')).registerFiles },
    { name: 'deal', term: 'deal', description: 'storage deals: ask for one, see where it is', load: async () => (await import('./commands/deal.js')).registerDeal },
    { name: 'names', term: 'names', description: 'IPNS keys: create, publish, list, remove', load: async () => (await import('./commands/names.js')).registerNames },
    { name: 'cid', term: 'cid [options] <files...>', description: 'print the CID `ipfs add` gives each file, like sha256sum (- reads stdin)', load: async () => (await import('./commands/cid.js')).registerCid },
    { name: 'local-service', term: 'local-service [options]', description: 'run the local implementation of the service in the foreground and print its base URL', load: async () => (await import('./commands/local-service.js')).registerLocalService },
  ]],
  ['Manual and shell:', [
    { name: 'generate', term: 'generate [options]', description: 'write the man pages, the shell completions (bash, zsh, fish) or the Markdown reference, all from this help', load: async () => (await import('./commands/generate.js')).registerGenerate, loadsAll: true },
  ]]
]
