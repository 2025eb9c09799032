/**
 * Agents: a name, a model, a system prompt and tools, kept in numbered versions. Terminology —
 * each statement lives in a file named for it:
 *
 * - **definition**: everything an agent says about itself (name, description, model, system,
 *   tools, metadata and the capabilities Leasehold does not offer, fixed at their empty values),
 *   resolved: every default filled in, exactly as the wire shows it. Stored whole, as jsonb, in
 *   `agent_versions.definition`; the wire adds only identity and times.
 * - **version**: 1 at create; each update that changes the definition appends n + 1. Versions
 *   are immutable, so a session pins the one it was created with. `agents.version` is the newest.
 * - **params / patch**: what a create or an update sends, before resolution. A patch leaves
 *   what it omits as it was; `tools` and `model` replace whole, `metadata` merges.
 * - **archived**: `archived_at` is set. The agent is read-only, lists leave it out unless asked,
 *   and no new session may use it (`resolveAgent` refuses it); its versions stay readable.
 *
 * Times are database time rendered as RFC 3339 UTC strings (`ts()`), never a JS `Date`.
 */
import type { Timestamp } from '../db/time.js';

/** Whether a built-in tool's call runs at once, waits for approval, or is judged per call. */
export type PermissionPolicy = { type: 'always_allow' | 'always_ask' | 'auto' };

/** The tools of `agent_toolset_20260401`, in the order the resolved `configs` list them. */
export const TOOLSET_TOOLS = [
  'bash',
  'edit',
  'read',
  'write',
  'glob',
  'grep',
  'web_fetch',
  'web_search',
] as const;
export type ToolsetToolName = (typeof TOOLSET_TOOLS)[number];
export const TOOLSET_TYPE = 'agent_toolset_20260401';

export interface ToolConfig {
  type: ToolsetToolName;
  name: ToolsetToolName;
  enabled: boolean;
  permission_policy: PermissionPolicy;
}

export interface AgentToolset {
  type: typeof TOOLSET_TYPE;
  default_config: { enabled: boolean; permission_policy: PermissionPolicy };
  /** One entry per tool of the set, each with its effective settings. */
  configs: ToolConfig[];
}

/** JSON Schema of a custom tool's input: an object schema, kept as sent. */
export type InputSchema = {
  type: 'object';
  properties?: Record<string, unknown> | null;
  required?: string[] | null;
} & Record<string, unknown>;

/** A tool the API client runs itself: the session asks for it and waits for the result. */
export interface CustomTool {
  type: 'custom';
  name: string;
  description: string;
  input_schema: InputSchema;
}

export type Tool = AgentToolset | CustomTool;

export const EFFORT_LEVELS = ['low', 'medium', 'high', 'xhigh', 'max'] as const;
export type EffortLevel = (typeof EFFORT_LEVELS)[number];

/** The wire's `BetaManagedAgentsModelConfig`: `effort` and `inference_geo` only when chosen. */
export interface ModelConfig {
  id: string;
  speed: 'standard' | 'fast';
  effort?: { type: EffortLevel };
  inference_geo?: string;
}

/** The resolved definition, as stored and as the wire shows it (identity and times aside). */
export interface AgentDefinition {
  name: string;
  description: string | null;
  model: ModelConfig;
  system: string | null;
  tools: Tool[];
  mcp_servers: [];
  skills: [];
  multiagent: null;
  execution_identity: { type: 'service_account' };
  metadata: Record<string, string>;
}

/** The largest version number: what a column of type integer holds. */
export const MAX_VERSION = 2_147_483_647;

/** One version of an agent: its definition and when it was written (`updatedAt`). */
export interface Agent {
  id: string;
  version: number;
  definition: AgentDefinition;
  archivedAt: Timestamp | null;
  createdAt: Timestamp;
  /** When this version was written; for version 1, `createdAt`. */
  updatedAt: Timestamp;
}

/** A keyset position in the agents list: the (created_at, id) of a page's last agent. */
export interface AgentCursor {
  createdAt: Timestamp;
  id: string;
}

/**
 * The agent a session runs, as the wire's `BetaManagedAgentsSessionAgent` shows it: one
 * version's definition with its identity, without metadata or times. A type, not an interface,
 * so it is a `Record<string, unknown>` wherever a JSON document is kept.
 */
export type SessionAgent = { id: string; type: 'agent'; version: number } & Omit<AgentDefinition, 'metadata'>;
