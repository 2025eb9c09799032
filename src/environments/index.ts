/**
 * Environments' public surface. See `types.ts` for the terminology; each statement lives in
 * a file named for it.
 */

export { archiveEnvironment } from './archive.js';
export {
  type CloudConfig,
  type ConfigParams,
  DEFAULT_CONFIG,
  type EnvironmentConfig,
  type Networking,
  type NetworkingParams,
  PACKAGE_MANAGERS,
  type Packages,
  type PackagesParams,
  resolveConfig,
} from './config.js';
export { createEnvironment, type NewEnvironment } from './create.js';
export { type DeleteOutcome, deleteEnvironment } from './delete.js';
export { getEnvironment } from './get.js';
export { listEnvironments } from './list.js';
export {
  applyMetadataPatch,
  MAX_METADATA_KEY,
  MAX_METADATA_PAIRS,
  MAX_METADATA_VALUE,
  type MetadataPatch,
  metadataProblem,
} from './metadata.js';
export type { Environment, EnvironmentCursor, EnvironmentKind } from './types.js';
export { type EnvironmentPatch, type UpdateOutcome, updateEnvironment } from './update.js';
