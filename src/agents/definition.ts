/**
 * From a create's params or an update's patch to a resolved definition. On create, anything
 * omitted (or null) takes its default; on update it keeps the stored value — except where the
 * SDK says otherwise: `tools` and `model` replace whole, `metadata` merges key by key, and
 * `""` clears `description` and `system` (stored as null, as on create).
 */
import { MAX_METADATA_PAIRS, metadataProblem } from '../environments/index.js';
import { AgentDefinitionError } from './errors.js';
import { resolveTools, type ToolParams } from './tools.js';
import type { AgentDefinition, EffortLevel, ModelConfig } from './types.js';

/** A model id, or a `model_config` object; `effort` takes `"high"` or `{"type":"high"}` alike. */
export type ModelParams =
  | string
  | {
      id: string;
      effort?: EffortLevel | { type: EffortLevel } | null;
      inference_geo?: string | null;
      speed?: 'standard' | 'fast' | null;
    };

export interface AgentParams {
  name: string;
  model: ModelParams;
  description?: string | null;
  system?: string | null;
  tools?: ToolParams[] | null;
  metadata?: Record<string, string> | null;
}

/** An update: omitted fields keep their value; a metadata value of null deletes its key. */
export interface AgentPatch {
  name?: string;
  model?: ModelParams;
  description?: string | null;
  system?: string | null;
  tools?: ToolParams[] | null;
  metadata?: Record<string, string | null> | null;
}

/** The definition a create describes, or an `AgentDefinitionError` naming what cannot be. */
export function resolveDefinition(params: AgentParams): AgentDefinition {
  const metadata = checkedMetadata(params.metadata ?? {});
  return {
    name: params.name,
    description: cleared(params.description),
    model: resolveModel(params.model),
    system: cleared(params.system),
    tools: resolveTools(params.tools),
    mcp_servers: [],
    skills: [],
    multiagent: null,
    execution_identity: { type: 'service_account' },
    metadata: { ...metadata },
  };
}

/** `base` with `patch` applied, or an `AgentDefinitionError` naming what cannot be. */
export function patchDefinition(base: AgentDefinition, patch: AgentPatch): AgentDefinition {
  // Merged through a Map: assigning a key named `__proto__` to an object would set its prototype.
  const merged = new Map(Object.entries(base.metadata));
  for (const [key, value] of Object.entries(checkedMetadata(patch.metadata ?? {}))) {
    if (value === null) merged.delete(key);
    else merged.set(key, value);
  }
  const metadata = Object.fromEntries(merged);
  if (merged.size > MAX_METADATA_PAIRS)
    throw new AgentDefinitionError(
      'metadata',
      `would have more than ${MAX_METADATA_PAIRS} keys after this update`,
    );
  return {
    ...base,
    name: patch.name ?? base.name,
    description: patch.description === undefined ? base.description : cleared(patch.description),
    model: patch.model === undefined ? base.model : resolveModel(patch.model, base.model),
    system: patch.system === undefined ? base.system : cleared(patch.system),
    tools: patch.tools === undefined ? base.tools : resolveTools(patch.tools),
    metadata,
  };
}

/**
 * The model config `params` describe. `speed` defaults to standard, what a model runs at
 * unless asked otherwise; `effort` and `inference_geo` appear only when chosen, since the
 * model's own default applies otherwise. On update the object replaces the stored one whole,
 * but an omitted `effort` keeps the stored effort (the SDK's documented exception).
 */
export function resolveModel(params: ModelParams, base?: ModelConfig): ModelConfig {
  const p = typeof params === 'string' ? { id: params } : params;
  const model: ModelConfig = { id: p.id, speed: p.speed ?? 'standard' };
  const effort = p.effort === undefined ? base?.effort?.type : p.effort;
  if (effort) model.effort = { type: typeof effort === 'string' ? effort : effort.type };
  if (p.inference_geo) model.inference_geo = p.inference_geo;
  return model;
}

/** "" and null both mean "none". */
const cleared = (text: string | null | undefined): string | null => (text ? text : null);

/** Metadata whose keys and values fit the caps (the environments' own), else a refusal. */
function checkedMetadata<T extends Record<string, string | null>>(metadata: T): T {
  const problem = metadataProblem(metadata);
  if (problem) throw new AgentDefinitionError('metadata', problem.replace(/^metadata /, ''));
  return metadata;
}

/** Whether two resolved definitions say the same thing (jsonb does not keep key order). */
export function sameDefinition(a: AgentDefinition, b: AgentDefinition): boolean {
  return sameJson(a, b);
}

function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  const rb = b as Record<string, unknown>;
  return ka.every((k) => Object.hasOwn(rb, k) && sameJson((a as Record<string, unknown>)[k], rb[k]));
}
