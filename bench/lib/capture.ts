/**
 * The statement a queue operation sends, taken from the code instead of retyped: the operation
 * runs once against the tests' recording handle (`sentQueries`), answered with `row`, and its
 * one statement comes back as PostgreSQL text and parameters, rendered as Leasehold's drivers
 * render it. The anchors that send "the very statement" (pgbench's scripts, the enqueue's
 * statement by hand) cannot drift from the code this way.
 */

import type { SqlHandle } from '../../src/db/handle.js';
import { type RenderedQuery, renderSql } from '../../src/db/render.js';
import { sentQueries } from '../../test/helpers/plans.js';

export async function captureStatement(
  op: (h: SqlHandle) => Promise<unknown>,
  row: unknown,
): Promise<RenderedQuery> {
  const sent = await sentQueries(op, row ? [row] : []);
  if (sent.length !== 1) throw new Error(`the operation sent ${sent.length} statements, not one`);
  return renderSql(sent[0]!);
}
