/**
 * Server-side prepared statements for the `pg` driver, without naming anything by hand.
 *
 * Drizzle sends every raw query as an unnamed statement, so PostgreSQL parses and plans the
 * queue's hot statements (claim, poll, enqueue, the credential lookup) on every call — on a
 * small machine that is most of a statement's cost. A `PreparingClient` names a
 * parameterised query the second time its exact text is seen on this process; `pg` then
 * parses it once per connection and afterwards sends only Bind/Execute.
 *
 * Glossary:
 * - **text**: a statement's SQL as Drizzle renders it; the same template always renders the
 *   same text, with values bound apart.
 * - **name**: `lh_<n>`, one per distinct text, shared by every connection of the process.
 *
 * Bounds, so generated SQL of unbounded variety cannot grow memory on either side: at most
 * `MAX_TRACKED` texts are counted and at most `MAX_NAMED` are ever named; beyond that queries
 * stay unnamed. Only queries with parameters are named: they already use the extended
 * protocol, and a parameterised query cannot hold several statements (which a prepared
 * statement may not). Turn it off (`prepare: false`) behind a pooler in transaction mode
 * that does not track protocol-level prepared statements.
 */
import pg from 'pg';

const MAX_TRACKED = 4_096;
const MAX_NAMED = 512;

const seen = new Map<string, number>();
const names = new Map<string, string>();

/** The name for `text`, or undefined while it has been seen only once (or the bounds are hit). */
export function statementName(text: string): string | undefined {
  const name = names.get(text);
  if (name !== undefined) return name;
  if (names.size >= MAX_NAMED) return undefined;
  const count = seen.get(text);
  if (count === undefined) {
    if (seen.size < MAX_TRACKED) seen.set(text, 1);
    return undefined;
  }
  const named = `lh_${names.size + 1}`;
  names.set(text, named);
  seen.delete(text);
  return named;
}

type QueryConfig = pg.QueryConfig & { name?: string };

/** A `pg.Client` that names repeated parameterised queries (see the module doc). */
export class PreparingClient extends pg.Client {
  // biome-ignore lint/suspicious/noExplicitAny: pg's query() is a set of overloads; this only rewrites its first argument.
  override query(config: any, values?: any, callback?: any): any {
    if (config && typeof config === 'object' && typeof config.text === 'string' && !config.name) {
      const params = (values ?? config.values) as unknown[] | undefined;
      if (Array.isArray(params) && params.length > 0) {
        const name = statementName(config.text);
        // Named in place: every caller (the direct handle, Drizzle's sessions) builds its config
        // for the one call, and the name is a function of the text, so a reused config only
        // gets the name it would get again. A copy cost ≈ 3 µs a statement, most of it in
        // `pg` cloning the copy's differently shaped object.
        if (name) {
          if (Object.isExtensible(config)) config.name = name;
          else config = { ...(config as QueryConfig), name };
        }
      }
    }
    return super.query(config, values, callback);
  }
}
