/**
 * Database time as every package's SQL renders and reads it: stamps are RFC 3339 strings from
 * end to end, never a JS `Date`, which would drop the microseconds that lease proofs and
 * heartbeat echoes compare on (docs/queue.md, "Timestamps").
 */
import { type Placeholder, type SQL, sql } from 'drizzle-orm';

/** RFC 3339 UTC with microseconds, trailing zeros trimmed, `Z` (e.g. `2026-11-30T09:34:12.12345Z`). */
export type Timestamp = string;

/**
 * Renders a timestamptz column as RFC 3339 UTC with microseconds, trailing zeros trimmed and
 * the fraction dropped when zero (`…:23.12345Z`, `…:23Z`). Done in SQL so no driver's type
 * parser or the session's TimeZone can touch it, and so the string round-trips exactly:
 * `'<it>'::timestamptz` is the stored value to the microsecond. NULL stays NULL.
 */
export function ts(column: string): string {
  return `(rtrim(rtrim(to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US'), '0'), '.') || 'Z')`;
}

/** A duration in milliseconds as an SQL interval, bound as a parameter. */
export function interval(ms: number | Placeholder): SQL {
  return sql`(${ms}::double precision * interval '1 millisecond')`;
}
