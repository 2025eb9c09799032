/**
 * Proof that a refused request changed nothing. Two instruments on the fuzz file's own
 * database: a row trigger on every table that notes each committed insert, update and delete
 * (a rolled-back write leaves no note), read per request as one `max(seq)`; and a digest of
 * every row of every table, compared around a sample of requests, which also covers a write
 * the trigger could miss. Requests run one at a time, so a note belongs to the request before it.
 */
import { sql } from 'drizzle-orm';
import type { Database } from '../../../src/db/handle.js';

/** Every table of `src/db/schema.ts`. */
export const TABLES = [
  'environments',
  'sessions',
  'work_items',
  'worker_polls',
  'queue_samples',
  'environment_keys',
  'api_keys',
  'agents',
  'agent_versions',
];

export async function installWriteAudit(db: Database): Promise<void> {
  await db.execute(
    sql.raw(`CREATE TABLE IF NOT EXISTS fuzz_writes (seq bigserial PRIMARY KEY, tbl text NOT NULL, op text NOT NULL);
      CREATE OR REPLACE FUNCTION fuzz_note_write() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN INSERT INTO fuzz_writes (tbl, op) VALUES (TG_TABLE_NAME, TG_OP); RETURN NULL; END $$;`),
  );
  for (const table of TABLES) {
    await db.execute(
      sql.raw(`CREATE OR REPLACE TRIGGER fuzz_note_write AFTER INSERT OR UPDATE OR DELETE ON ${table}
               FOR EACH ROW EXECUTE FUNCTION fuzz_note_write()`),
    );
  }
}

async function one<T>(db: Database, query: string): Promise<T> {
  const result = (await db.execute(sql.raw(query))) as unknown as { rows: T[] };
  return result.rows[0]!;
}

/** The last committed write's number (0 when none yet). */
export async function lastWrite(db: Database): Promise<number> {
  return Number((await one<{ n: string }>(db, 'SELECT coalesce(max(seq), 0) AS n FROM fuzz_writes')).n);
}

/** What the writes after `since` touched, for a failure message. */
export async function writesSince(db: Database, since: number): Promise<string> {
  const row = await one<{ w: string | null }>(
    db,
    `SELECT string_agg(op || ' ' || tbl, ', ' ORDER BY seq) AS w FROM fuzz_writes WHERE seq > ${Number(since)}`,
  );
  return row.w ?? '';
}

/** One md5 over every row of every table, in a stable order. */
export async function digest(db: Database): Promise<string> {
  const parts = TABLES.map(
    (t) => `(SELECT coalesce(md5(string_agg(r::text, '|' ORDER BY r::text)), '') FROM ${t} r)`,
  );
  return (await one<{ d: string }>(db, `SELECT md5(${parts.join(" || '/' || ")}) AS d`)).d;
}
