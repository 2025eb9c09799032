import { sql } from 'drizzle-orm';
import { rows, type SqlHandle } from '../db/handle.js';
import { instant } from '../db/instant.js';
import { EVENT_COLUMNS } from './sql.js';
import type { SessionEvent } from './types.js';

export interface EventListOptions {
  order: 'asc' | 'desc';
  /** Continue strictly past this sequence number in the list's order. */
  afterSeq?: number | null;
  types?: string[];
  /** processed_at bounds: [operator, RFC 3339 instant]. processed_at never decreases along seq. */
  createdAt?: Array<['gt' | 'gte' | 'lt' | 'lte', string]>;
  /** Rows to fetch: pass limit + 1 to learn whether another page exists. */
  fetch: number;
}

const OPERATORS = { gt: sql`>`, gte: sql`>=`, lt: sql`<`, lte: sql`<=` } as const;

/** A page of a session's log in sequence order (either direction), through its primary key. */
export function listEvents(
  db: SqlHandle,
  sessionId: string,
  options: EventListOptions,
): Promise<SessionEvent[]> {
  const desc = options.order === 'desc';
  const filters = [sql`e.session_id = ${sessionId}`];
  if (options.afterSeq != null)
    filters.push(desc ? sql`e.seq < ${options.afterSeq}` : sql`e.seq > ${options.afterSeq}`);
  if (options.types?.length) {
    filters.push(
      sql`e.type IN (${sql.join(
        options.types.map((t) => sql`${t}`),
        sql`, `,
      )})`,
    );
  }
  for (const [op, at] of options.createdAt ?? []) {
    const bound = instant(at);
    if (!bound) throw new TypeError(`not an RFC 3339 instant: ${JSON.stringify(at)}`);
    filters.push(sql`e.processed_at ${OPERATORS[op]} ${bound}`);
  }
  return rows<SessionEvent>(
    db,
    sql`SELECT ${EVENT_COLUMNS} FROM session_events e
         WHERE ${sql.join(filters, sql` AND `)}
         ORDER BY e.seq ${desc ? sql`DESC` : sql`ASC`}
         LIMIT ${options.fetch}`,
  );
}
