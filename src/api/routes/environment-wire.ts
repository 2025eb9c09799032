/**
 * The environment on the wire — the SDK's `BetaEnvironment`, field by field — and the
 * environment list's cursor.
 */
import * as z from 'zod/mini';
import type { Environment, EnvironmentCursor } from '../../environments/index.js';
import { decodeKeysetCursor, encodeKeysetCursor } from '../cursor.js';

export function toWireEnvironment(e: Environment) {
  return {
    id: e.id,
    type: 'environment' as const,
    name: e.name,
    description: e.description,
    metadata: e.metadata,
    config: e.config,
    archived_at: e.archivedAt,
    created_at: e.createdAt,
    updated_at: e.updatedAt,
    // Only organization scope exists here ('account' is refused at create).
    scope: 'organization' as const,
  };
}

export type WireEnvironment = ReturnType<typeof toWireEnvironment>;

const stamp = z.string().check(z.describe('RFC 3339 UTC, microseconds, trailing zeros trimmed'));
const names = z.array(z.string());
const wireNetworkingSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('unrestricted') }),
  z.object({
    type: z.literal('limited'),
    allow_mcp_servers: z.boolean(),
    allow_package_managers: z.boolean(),
    allowed_hosts: names,
  }),
]);
const wireConfigSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('self_hosted') }),
  z.object({
    type: z.literal('cloud'),
    networking: wireNetworkingSchema,
    packages: z.object({
      type: z.literal('packages'),
      apt: names,
      cargo: names,
      gem: names,
      go: names,
      npm: names,
      pip: names,
    }),
  }),
]);
export const wireEnvironmentSchema = z.object({
  id: z.string(),
  type: z.literal('environment'),
  name: z.string(),
  description: z.nullable(z.string()),
  metadata: z.record(z.string(), z.string()),
  config: wireConfigSchema,
  archived_at: z.nullable(stamp),
  created_at: stamp,
  updated_at: stamp,
  scope: z.literal('organization'),
});
export const wireEnvironmentListSchema = z.object({
  data: z.array(wireEnvironmentSchema),
  next_page: z.nullable(z.string()),
});
export const wireEnvironmentDeletedSchema = z.object({
  id: z.string(),
  type: z.literal('environment_deleted'),
});

/** Opaque list cursor of the environments list (see cursor.ts). */
export const encodeEnvironmentCursor = (c: EnvironmentCursor): string => encodeKeysetCursor('env1', c);
export const decodeEnvironmentCursor = (page: string): EnvironmentCursor | null =>
  decodeKeysetCursor('env1', 'env', page);
