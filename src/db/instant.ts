/**
 * A timestamp string from outside (a heartbeat echo, a lease proof, a list cursor) as the SQL
 * instant it names — the one way such a value reaches a query. Postgres refuses some valid
 * RFC 3339 values (offsets beyond ±15:59, fractions of a hundred-odd digits) with an error,
 * which would surface as a 500 instead of a precondition failure, a lost lease or a bad
 * cursor; so the local time and the offset are bound apart and the fraction is cut to
 * nanoseconds (Postgres then rounds to its microseconds).
 */
import { type Placeholder, type SQL, sql } from 'drizzle-orm';
import { isRfc3339 } from '../rfc3339.js';

const PARTS = /^(.{19})(\.\d{1,9})?\d*(?:[Zz]|([+-])(\d{2}):(\d{2}))$/;

/** The instant's wall-clock part and its offset from UTC in minutes, bound apart (see above). */
export interface InstantParts {
  local: string;
  offsetMinutes: number;
}

/** The parts of `value`, or null when it is not an RFC 3339 date-time. */
export function instantParts(value: string): InstantParts | null {
  if (!isRfc3339(value)) return null;
  const m = PARTS.exec(value)!;
  const offsetMinutes = m[3] === undefined ? 0 : (m[3] === '-' ? -1 : 1) * (Number(m[4]) * 60 + Number(m[5]));
  return { local: m[1]! + (m[2] ?? ''), offsetMinutes };
}

/** The instant, or null when `value` is not an RFC 3339 date-time. */
export function instant(value: string): SQL | null {
  const parts = instantParts(value);
  if (!parts) return null;
  return instantOf(parts.local, parts.offsetMinutes);
}

/**
 * The instant of parts bound apart (`instantParts`), as values or as placeholders a fixed
 * statement fills (`fixed-sql.ts`).
 */
export function instantOf(local: string | Placeholder, offsetMinutes: number | Placeholder): SQL {
  return sql`((${local}::timestamp - make_interval(mins => ${offsetMinutes}::integer)) AT TIME ZONE 'UTC')`;
}
