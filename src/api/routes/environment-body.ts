/**
 * Request bodies of the environment endpoints, as the SDK's `EnvironmentCreateParams` and
 * `EnvironmentUpdateParams` (nullable fields mean "default" on create and "keep" on update).
 * Unknown fields are refused at every level. Caps are documented here and in the OpenAPI
 * document; metadata problems answer 400 with `error_code: invalid_metadata`.
 */
import * as z from 'zod/mini';
import {
  MAX_METADATA_KEY,
  MAX_METADATA_PAIRS,
  MAX_METADATA_VALUE,
  type MetadataPatch,
  metadataProblem,
} from '../../environments/index.js';
import { codedBadRequest } from './management-scope.js';

export const MAX_NAME = 256;
export const MAX_DESCRIPTION = 2048;
/** Entries per package list or allowed_hosts: a sandbox recipe, not a mirror. */
const MAX_LIST = 256;
const MAX_PACKAGE = 256;
/** The longest DNS name. */
const MAX_HOST = 253;

const name = z
  .string()
  .check(
    z.trim(),
    z.minLength(1),
    z.maxLength(MAX_NAME),
    z.describe(`1–${MAX_NAME} characters after trimming`),
  );
const description = z
  .string()
  .check(z.maxLength(MAX_DESCRIPTION), z.describe(`at most ${MAX_DESCRIPTION} characters`));
const scope = z
  .enum(['organization', 'account'])
  .check(
    z.refine((s) => s === 'organization', "only 'organization' scope is supported; 'account' is rejected"),
  );

const optional = <T extends z.ZodMiniType>(schema: T) => z.optional(z.nullable(schema));
const packageList = optional(
  z.array(z.string().check(z.minLength(1), z.maxLength(MAX_PACKAGE))).check(z.maxLength(MAX_LIST)),
);

const networkingParams = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('unrestricted') }),
  z.strictObject({
    type: z.literal('limited'),
    allow_mcp_servers: optional(z.boolean()),
    allow_package_managers: optional(z.boolean()),
    allowed_hosts: optional(
      z.array(z.string().check(z.minLength(1), z.maxLength(MAX_HOST))).check(z.maxLength(MAX_LIST)),
    ),
  }),
]);

const packagesParams = z.strictObject({
  type: z.optional(z.literal('packages')),
  apt: packageList,
  cargo: packageList,
  gem: packageList,
  go: packageList,
  npm: packageList,
  pip: packageList,
});

const configParams = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('self_hosted') }),
  z.strictObject({
    type: z.literal('cloud'),
    networking: optional(networkingParams),
    packages: optional(packagesParams),
  }),
]);

const metadataNote = `at most ${MAX_METADATA_PAIRS} pairs; keys 1–${MAX_METADATA_KEY} characters, values at most ${MAX_METADATA_VALUE} characters`;

export const createEnvironmentBody = z.strictObject({
  name,
  config: optional(configParams).check(z.describe('default: cloud, unrestricted networking, no packages')),
  description: optional(description),
  metadata: z
    .optional(z.record(z.string(), z.string()))
    .check(z.describe(`${metadataNote}; "" values are dropped`)),
  scope: optional(scope),
});

export const updateEnvironmentBody = z.strictObject({
  name: optional(name),
  description: optional(description).check(z.describe('omit to keep; null clears; "" is stored as ""')),
  metadata: optional(z.record(z.string(), z.nullable(z.string()))).check(
    z.describe(`null or "" deletes a key, omitted keys stay; ${metadataNote} after the update`),
  ),
  config: optional(configParams).check(
    z.describe('config.type cannot change; omitted fields keep their value'),
  ),
  scope: optional(scope),
});

/** The patch, or a 400 `invalid_metadata` naming what is wrong with it. */
export function checkedMetadata<T extends MetadataPatch>(patch: T | null | undefined): T | undefined {
  if (!patch) return undefined;
  const problem = metadataProblem(patch);
  if (problem) throw invalidMetadata(problem);
  return patch;
}

export const invalidMetadata = (message: string) => codedBadRequest(message, 'invalid_metadata');
