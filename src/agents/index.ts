/**
 * Agents' public surface. See `types.ts` for the terminology; each statement lives in a file
 * named for it.
 */

export { archiveAgent } from './archive.js';
export { createAgent } from './create.js';
export {
  type AgentParams,
  type AgentPatch,
  type ModelParams,
  patchDefinition,
  resolveDefinition,
  resolveModel,
} from './definition.js';
export { AgentArchivedError, AgentDefinitionError, AgentError, AgentVersionConflictError } from './errors.js';
export { getAgent } from './get.js';
export { type ListAgentsOptions, listAgents } from './list.js';
export { listAgentVersions } from './list-versions.js';
export { resolveAgent } from './resolve.js';
export {
  MAX_TOOLS,
  resolveTools,
  type ToolConfigParams,
  type ToolParams,
  type ToolsetParams,
  UNRUNNABLE_TOOLSET_TOOLS,
} from './tools.js';
export {
  type Agent,
  type AgentCursor,
  type AgentDefinition,
  type AgentToolset,
  type CustomTool,
  EFFORT_LEVELS,
  type EffortLevel,
  type InputSchema,
  MAX_VERSION,
  type ModelConfig,
  type PermissionPolicy,
  type SessionAgent,
  TOOLSET_TOOLS,
  TOOLSET_TYPE,
  type Tool,
  type ToolConfig,
  type ToolsetToolName,
} from './types.js';
export { updateAgent } from './update.js';
