/**
 * The slow suite (`npm run test:slow`): each entry is a path or a glob from the repository root.
 * Every other test file is in the fast suite (`npm test`). `vitest.config.ts` reads this list
 * alone, and `test/house.test.ts` checks that each test file is in exactly one suite.
 * CONTRIBUTING.md ("Two suites") says which files belong here.
 */
export const SLOW_FILES: readonly string[] = [
  // The reliability suites: kill -9 loops, faults, load and time, end to end.
  'test/proof/**/*.test.ts',
  // A real browser drives the dashboard.
  'test/dashboard/*browser.test.ts',
  // Crash scenarios: a process killed at each step, then recovered.
  'test/cli/content-crash-embedded.test.ts',
  'test/cli/content-crash.test.ts',
  'test/cli/incremental-crash.test.ts',
  'test/cli/state-recovery.test.ts',
  'test/daemon/content-crash.test.ts',
  'test/e2e/operations.test.ts',
  'test/e2e/publish-restore.test.ts',
  'test/exits/crash.test.ts',
  'test/sync/publish/root.test.ts',
  // The built CLI run many times a file, or its daemon as a process: started, signalled, stopped.
  'test/cli/code-cache.test.ts',
  'test/cli/content-changed.test.ts',
  'test/cli/content-seen.test.ts',
  'test/cli/daemon-process.test.ts',
  'test/cli/export-dir.test.ts',
  'test/cli/find.test.ts',
  'test/cli/generate.test.ts',
  'test/cli/get-output.test.ts',
  'test/cli/get-plain-profile.test.ts',
  'test/cli/get.test.ts',
  'test/cli/init.test.ts',
  'test/cli/key-flow.test.ts',
  'test/cli/ls.test.ts',
  'test/cli/production-answers.test.ts',
  'test/cli/safe-text.test.ts',
  'test/cli/service-commands.test.ts',
  'test/cli/snapshot-folder-error.test.ts',
  'test/cli/status.test.ts',
  'test/cli/two-devices.test.ts',
  'test/cli/verify-content.test.ts',
  // Mirrors: a second service, copies and lag, end to end.
  'test/cli/mirror-directory.test.ts',
  'test/cli/mirror-lag.test.ts',
  'test/cli/mirror-others.test.ts',
  'test/cli/mirror-reads.test.ts',
  'test/cli/mirror-skipped.test.ts',
  'test/cli/mirrors.test.ts',
  'test/exits/import-mirror.test.ts',
  // Content stored and fetched through a daemon, under faults and outages.
  'test/cli/content-dedup.test.ts',
  'test/cli/content-faults.test.ts',
  'test/cli/files-as-they-are.test.ts',
  'test/cli/history.test.ts',
  'test/custody/store-and-fetch.test.ts',
  'test/daemon/content-keeper.test.ts',
  'test/daemon/content-outage.test.ts',
  'test/sync/storing/content-index.test.ts',
  'test/sync/storing/store-content-limits.test.ts',
  // A whole daemon in this process, through its HTTP routes.
  'test/daemon/daemon.test.ts',
  'test/daemon/dashboard-auth.test.ts',
  'test/daemon/download-route.test.ts',
  'test/daemon/embedded-token.test.ts',
  'test/daemon/event-stream.test.ts',
  'test/daemon/find-routes.test.ts',
  'test/daemon/readiness.test.ts',
  'test/daemon/recent-errors.test.ts',
  'test/daemon/service-thread.test.ts',
  // Big trees and big files: exports, imports, hashing, scanning and watching at scale.
  'test/exits/export-threaded.test.ts',
  'test/exits/import-parts.test.ts',
  'test/exits/import-race.test.ts',
  'test/exits/refusals.test.ts',
  'test/exits/round-trip.test.ts',
  'test/watch/drift-check.test.ts',
  'test/watch/folder-lifecycle.test.ts',
  'test/watch/hash-pool.test.ts',
  'test/watch/long-paths.test.ts',
  'test/watch/scan.test.ts',
  'test/watch/watcher.test.ts',
  // Counts of the whole process (its descriptors, its memory): the fast suite runs two files on
  // threads of one process, so each would count the other's too.
  'test/connect/embedded-access.test.ts',
  'test/daemon/status-server.test.ts',
  'test/local-service/blocks-adopt.test.ts',
  'test/remote/response-bounds.test.ts',
  'test/util/write-back-stream.test.ts',
  // The local service at scale or started afresh for each test; an independent IPFS node reading ours.
  'test/connect/embedded-conformance.test.ts',
  'test/exits/plain-root.test.ts',
  'test/local-service/dag-import-links.test.ts',
  'test/local-service/gateway-helia.test.ts',
  'test/local-service/signup-bounds.test.ts'
]
