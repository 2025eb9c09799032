/**
 * A hot statement rendered once, when its module loads, instead of on every call.
 *
 * A `sql` template is built, walked and joined into text on every call, and the driver then
 * hashes that fresh text to find its prepared statement (`prepared.ts`): for the enqueue,
 * about half of the JavaScript it runs per item, all to produce the same text again. A fixed
 * statement is written once with `sql.placeholder(name)` where its values go; each call
 * supplies the values and gets an `sql` query that carries its rendering: the one shared text
 * (whose hash the engine keeps) and its own parameters. `renderSql` hands that rendering back
 * as it is.
 *
 * The query is still a whole Drizzle `sql` query: its chunks are the text's pieces with the
 * values between them, so Drizzle's own renderer (PGlite, Drizzle's transactions, a fixed
 * query nested in another) renders it to the same text and parameters.
 */
import { Placeholder, SQL, StringChunk } from 'drizzle-orm';
import { type RenderedQuery, renderSql } from './render.js';

/** What a fixed statement binds: the values `renderSql` binds as they are. */
export type Bindable = string | number | boolean | bigint | null;

/** A query that carries its own rendering (`renderSql` returns it unchanged). */
export class RenderedSql extends SQL {
  constructor(
    chunks: unknown[],
    readonly rendered: RenderedQuery,
  ) {
    // Drizzle's constructor asks each chunk whether it is a table (a walk of its prototype
    // chain), about a third of a fixed call's cost; this one's chunks are text and plain values.
    super([]);
    (this as { queryChunks: unknown[] }).queryChunks = chunks;
  }

  /** Its rendering is fixed: appending would leave it stale. Nest it in a template instead. */
  override append(): this {
    throw new TypeError('a fixed statement cannot be appended to; nest it in a template instead');
  }
}

/** A parameter of the statement: a placeholder filled per call, or a value the template fixed. */
type Slot = { name: string } | { value: Bindable };

/**
 * The statement `template` (placeholders where the values go) as a function of those values.
 * Throws at once when the template cannot be fixed: its rendered text holds a `$n` that is not
 * one of its parameters, or it fixes a value that is not a plain one.
 */
export function fixedSql<Name extends string>(
  template: SQL,
): (values: Readonly<Record<Name, Bindable>>) => SQL {
  const { sql: text, params } = renderSql(template);
  const slots = params.map(slotOf);
  const pieces = text.split(/\$(\d+)/);
  // split() with a capture group alternates text and the captured numbers: t0, "1", t1, "2", …
  const numbers = pieces.filter((_, i) => i % 2 === 1);
  if (numbers.length !== slots.length || numbers.some((n, i) => Number(n) !== i + 1)) {
    throw new Error('fixedSql: the statement holds a "$n" of its own text; write it as a parameter');
  }
  const strings = pieces.filter((_, i) => i % 2 === 0).map((piece) => new StringChunk(piece));
  return (values) => {
    const bound: Bindable[] = new Array(slots.length);
    const chunks: unknown[] = new Array(2 * slots.length + 1);
    chunks[0] = strings[0];
    for (let i = 0; i < slots.length; i++) {
      const slot = slots[i]!;
      const value = 'name' in slot ? filled(values as Record<string, unknown>, slot.name) : slot.value;
      bound[i] = value;
      chunks[2 * i + 1] = value;
      chunks[2 * i + 2] = strings[i + 1];
    }
    return new RenderedSql(chunks, { sql: text, params: bound });
  };
}

/**
 * A statement in two fixed shapes chosen by the call's `n`: `template(1)` for a single call
 * (its LIMIT written in: as a parameter, a generic plan guesses a tenth of the table for it and
 * hashes all of it to take one row) and `template(placeholder n)` for a batch, bound.
 */
export function fixedSqlByLimit<Name extends string>(
  template: (limit: 1 | Placeholder) => SQL,
): (values: Readonly<Record<Name | 'n', Bindable>>) => SQL {
  const one = fixedSql<Name | 'n'>(template(1));
  const many = fixedSql<Name | 'n'>(template(new Placeholder('n')));
  return (values) => (values.n === 1 ? one(values) : many(values));
}

function slotOf(param: unknown): Slot {
  if (param instanceof Placeholder) return { name: param.name as string };
  if (!bindable(param))
    throw new TypeError('fixedSql: a fixed value must be a string, number, boolean, bigint or null');
  return { value: param };
}

function filled(values: Record<string, unknown>, name: string): Bindable {
  const value = values[name];
  if (!bindable(value)) {
    throw new TypeError(`fixedSql: "${name}" must be a string, number, boolean, bigint or null`);
  }
  return value;
}

function bindable(value: unknown): value is Bindable {
  return (
    value === null ||
    typeof value === 'string' ||
    typeof value === 'number' ||
    typeof value === 'boolean' ||
    typeof value === 'bigint'
  );
}
