/**
 * Environment config documents, as the official SDK types them (`BetaCloudConfig`,
 * `BetaSelfHostedConfig`), and how request params resolve into one. On create, anything
 * omitted (or null) takes the default; on update it keeps the stored value — the SDK's
 * "fields default to null; on update, omitted fields preserve the existing value".
 */

export type Networking =
  | { type: 'unrestricted' }
  | { type: 'limited'; allow_mcp_servers: boolean; allow_package_managers: boolean; allowed_hosts: string[] };

export const PACKAGE_MANAGERS = ['apt', 'cargo', 'gem', 'go', 'npm', 'pip'] as const;
export type PackageManager = (typeof PACKAGE_MANAGERS)[number];

export type Packages = { type: 'packages' } & Record<PackageManager, string[]>;

export type CloudConfig = { type: 'cloud'; networking: Networking; packages: Packages };
export type EnvironmentConfig = { type: 'self_hosted' } | CloudConfig;

type Nullable<T> = { [K in keyof T]?: T[K] | null };

export type NetworkingParams =
  | { type: 'unrestricted' }
  | ({ type: 'limited' } & Nullable<Omit<Extract<Networking, { type: 'limited' }>, 'type'>>);
export type PackagesParams = { type?: 'packages' } & Nullable<Record<PackageManager, string[]>>;
export type ConfigParams =
  | { type: 'self_hosted' }
  | { type: 'cloud'; networking?: NetworkingParams | null; packages?: PackagesParams | null };

const NO_PACKAGES: Packages = { type: 'packages', apt: [], cargo: [], gem: [], go: [], npm: [], pip: [] };
const LIMITED_DEFAULTS = { allow_mcp_servers: false, allow_package_managers: false, allowed_hosts: [] };

/** What an environment created without a config gets: cloud, unrestricted, no packages. */
export const DEFAULT_CONFIG: CloudConfig = {
  type: 'cloud',
  networking: { type: 'unrestricted' },
  packages: NO_PACKAGES,
};

/**
 * The config `params` describe, filling gaps from `base` (the stored config on update) or
 * from the defaults. The caller has already refused a change of `type`.
 */
export function resolveConfig(
  params: ConfigParams | null | undefined,
  base?: EnvironmentConfig,
): EnvironmentConfig {
  // A deep copy: the result must never share arrays with DEFAULT_CONFIG or the stored config.
  return structuredClone(resolve(params, base));
}

function resolve(params: ConfigParams | null | undefined, base?: EnvironmentConfig): EnvironmentConfig {
  if (!params) return base ?? DEFAULT_CONFIG;
  if (params.type === 'self_hosted') return { type: 'self_hosted' };
  const current = base?.type === 'cloud' ? base : DEFAULT_CONFIG;
  return {
    type: 'cloud',
    networking: resolveNetworking(params.networking, current.networking),
    packages: resolvePackages(params.packages, current.packages),
  };
}

function resolveNetworking(params: NetworkingParams | null | undefined, base: Networking): Networking {
  if (!params) return base;
  if (params.type === 'unrestricted') return { type: 'unrestricted' };
  // Switching from unrestricted to limited starts from the limited defaults, not from nothing.
  const from = base.type === 'limited' ? base : { type: 'limited' as const, ...LIMITED_DEFAULTS };
  return {
    type: 'limited',
    allow_mcp_servers: params.allow_mcp_servers ?? from.allow_mcp_servers,
    allow_package_managers: params.allow_package_managers ?? from.allow_package_managers,
    allowed_hosts: params.allowed_hosts ?? from.allowed_hosts,
  };
}

function resolvePackages(params: PackagesParams | null | undefined, base: Packages): Packages {
  if (!params) return base;
  const out: Packages = { ...base, type: 'packages' };
  for (const manager of PACKAGE_MANAGERS) out[manager] = params[manager] ?? base[manager];
  return out;
}
