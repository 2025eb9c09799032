import { sql } from 'drizzle-orm';
import { rows, type SqlHandle } from '../db/handle.js';
import { instant } from '../db/instant.js';
import { SESSION_COLUMNS } from './sql.js';
import type { Session, SessionStatus } from './types.js';

export interface SessionListOptions {
  order: 'asc' | 'desc';
  /** Continue strictly past this (created_at, id) in the list's order. */
  after?: { createdAt: string; id: string } | null;
  includeArchived: boolean;
  agentId?: string;
  agentVersion?: number;
  statuses?: SessionStatus[];
  /** created_at bounds: [operator, RFC 3339 instant]. */
  createdAt?: Array<['gt' | 'gte' | 'lt' | 'lte', string]>;
  /** Rows to fetch: pass limit + 1 to learn whether another page exists. */
  fetch: number;
}

const OPERATORS = { gt: sql`>`, gte: sql`>=`, lt: sql`<`, lte: sql`<=` } as const;

/**
 * A page of the sessions the API created (platform-lane sessions have no agent and are not
 * listed), ordered by (created_at, id) in either direction, through `sessions_list_idx`.
 */
export function listSessions(db: SqlHandle, options: SessionListOptions): Promise<Session[]> {
  const desc = options.order === 'desc';
  const filters = [sql`s.agent IS NOT NULL`];
  if (!options.includeArchived) filters.push(sql`s.archived_at IS NULL`);
  if (options.agentId !== undefined) filters.push(sql`s.agent_id = ${options.agentId}`);
  if (options.agentVersion !== undefined) filters.push(sql`s.agent_version = ${options.agentVersion}`);
  if (options.statuses?.length) {
    filters.push(
      sql`s.status IN (${sql.join(
        options.statuses.map((s) => sql`${s}`),
        sql`, `,
      )})`,
    );
  }
  for (const [op, at] of options.createdAt ?? [])
    filters.push(sql`s.created_at ${OPERATORS[op]} ${checked(at)}`);
  if (options.after) {
    const at = checked(options.after.createdAt);
    filters.push(
      desc
        ? sql`(s.created_at, s.id) < (${at}, ${options.after.id})`
        : sql`(s.created_at, s.id) > (${at}, ${options.after.id})`,
    );
  }
  return rows<Session>(
    db,
    sql`SELECT ${SESSION_COLUMNS} FROM sessions s
         WHERE ${sql.join(filters, sql` AND `)}
         ORDER BY ${desc ? sql`s.created_at DESC, s.id DESC` : sql`s.created_at ASC, s.id ASC`}
         LIMIT ${options.fetch}`,
  );
}

/** An instant the route has already checked as RFC 3339. */
function checked(value: string) {
  const at = instant(value);
  if (!at) throw new TypeError(`not an RFC 3339 instant: ${JSON.stringify(value)}`);
  return at;
}
