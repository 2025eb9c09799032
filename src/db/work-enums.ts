/**
 * The value sets of `work_items`' enumerated columns (kind, state, lane, data type): the schema
 * declares the columns with them, and the queue, the API and the CLI check values against the
 * same lists. The queue's terms for them are in `queue/types.ts`.
 */

export const WORK_KINDS = ['model_turn', 'tool_exec', 'web_exec', 'outputs_harvest', 'mcp_exec'] as const;
export const WORK_STATES = ['queued', 'starting', 'active', 'stopping', 'stopped'] as const;
/** Who may take an item: `claim` (in-process/platform) or `poll` (the wire). */
export const WORK_LANES = ['claim', 'poll'] as const;
/** What an item is for, as the wire's `data.type` says: a session's work, or a healthcheck. */
export const WORK_DATA_TYPES = ['session', 'healthcheck'] as const;

export type WorkKind = (typeof WORK_KINDS)[number];
export type WorkState = (typeof WORK_STATES)[number];
export type WorkLane = (typeof WORK_LANES)[number];
export type WorkDataType = (typeof WORK_DATA_TYPES)[number];
