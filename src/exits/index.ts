/**
 * Exits: the whole history (and with it the stored content) taken anywhere as a CAR or into a
 * directory store, and put on any service from a CAR, with every CID unchanged (docs/exits.md).
 */
export { exportCar, exportTempPath } from './export-car.js'
export type { ExportInit, ExportResult, ExportProgressEvent } from './export-car.js'
export { exportDir, refuseMirrorDir } from './export-dir.js'
export type { ExportDirInit, ExportDirResult, ExportDirProgress, ExportDirProgressEvent } from './export-dir.js'
export type { ExportProgress, ExportedHistory } from './export-walk.js'
export { importCar } from './import-car.js'
export type { ImportInit, ImportResult, ImportStep, ImportProgressEvent } from './import-car.js'
export { scanCar } from './scan-car.js'
export type { ScannedCar } from './scan-car.js'
