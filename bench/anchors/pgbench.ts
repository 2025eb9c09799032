/**
 * pgbench as the limit: the very statements Leasehold's `claim` and `complete` send, or the
 * one `completeAndClaim` sends, run by PostgreSQL's own C client with prepared statements —
 * what the database allows for this work with no JavaScript in the way.
 *
 * The statements are not retyped here: each operation is run once against a recording
 * handle (`captureStatement`), so the anchor cannot drift from the code.
 * Constant parameters are inlined as literals; the claimed id and lease proof flow from one
 * statement to the next through pgbench variables (`\gset`).
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { claim, claimMany, complete, completeAndClaim, completeMany } from '../../src/queue/index.js';
import type { Item } from '../../src/queue/types.js';
import { captureStatement } from '../lib/capture.js';

const run = promisify(execFile);

const PLACEHOLDER_ID = '__bench_id__';
const PLACEHOLDER_LEASE = '2000-01-01T00:00:00.123456Z';

function literal(value: unknown): string {
  if (typeof value === 'number') return String(value);
  if (typeof value === 'string') return `'${value.replaceAll("'", "''")}'`;
  throw new Error(`cannot inline ${typeof value} into a pgbench script`);
}

/**
 * pgbench reads `:name` as a variable even inside a string literal, so the time format's
 * colons (`HH24:MI:SS`) are spelled `chr(58)`; the planner folds the constant either way.
 */
function pgbenchSafe(text: string): string {
  return text.replaceAll('HH24:MI:SS', "HH24' || chr(58) || 'MI' || chr(58) || 'SS");
}

function inline(text: string, params: unknown[], bind: (value: unknown) => string | undefined): string {
  const flat = pgbenchSafe(text.replace(/\s+/g, ' ').trim());
  return flat.replace(/\$(\d+)/g, (_, n: string) => {
    const value = params[Number(n) - 1];
    return bind(value) ?? literal(value);
  });
}

/** The pgbench script for one claim + complete of `kind` with a `ttlMs` lease. */
export async function claimCompleteScript(kind: Item['kind'], ttlMs: number): Promise<string> {
  const claimed = await captureStatement((h) => claim(h, kind, ttlMs), null);
  const fake = { id: PLACEHOLDER_ID, lease: PLACEHOLDER_LEASE } as Item;
  const completed = await captureStatement((h) => complete(h, fake), { ok: 1 });
  const claimSql = inline(claimed.sql, claimed.params, () => undefined);
  const completeSql = inline(completed.sql, completed.params, bindHeld);
  if (!completeSql.includes(':id') || !completeSql.includes(':lease')) {
    throw new Error(
      `the completion no longer binds the id and proof the way this anchor expects:\n${completeSql}`,
    );
  }
  return `${claimSql} \\gset\n${completeSql};\n`;
}

/** Binds the held item's id and proof to the pgbench variables `:id` and `:lease`. */
function bindHeld(value: unknown): string | undefined {
  if (value === PLACEHOLDER_ID) return ':id';
  if (value === PLACEHOLDER_LEASE.slice(0, -1)) return "rtrim(:lease, 'Z')";
  return undefined;
}

/**
 * The worker loop as pgbench runs it: one `completeAndClaim` of `kind` with a `ttlMs` lease
 * per transaction, completing the item the client's previous transaction claimed (`:id`,
 * `:lease`) and keeping the next one's for the transaction after. Run it with `LOOP_START`
 * defined: the first transaction holds nothing, so it completes nothing and only claims.
 */
export async function completeAndClaimScript(kind: Item['kind'], ttlMs: number): Promise<string> {
  const fake = { id: PLACEHOLDER_ID, lease: PLACEHOLDER_LEASE } as Item;
  const step = await captureStatement((h) => completeAndClaim(h, fake, kind, ttlMs), {
    completed: true,
    id: null,
  });
  const stepSql = inline(step.sql, step.params, bindHeld);
  if ((stepSql.match(/:id\b/g) ?? []).length < 2 || !stepSql.includes(':lease')) {
    throw new Error(
      `completeAndClaim no longer binds the id and proof the way this anchor expects:\n${stepSql}`,
    );
  }
  return `${stepSql} \\gset\n`;
}

/** The variables a `completeAndClaimScript` client starts with: an id and a proof that hold nothing. */
export const LOOP_START: Record<string, string> = { id: 'work_none', lease: '2000-01-01T00:00:00Z' };

/**
 * The pgbench script for one `claimMany` of `batch` items of `kind` and the `completeMany` of
 * what it took: claimMany's statement with its result folded into the proofs document
 * completeMany takes (`\gset` carries one row), then completeMany's statement on it. A
 * transaction is `batch` items.
 */
export async function claimManyCompleteManyScript(
  kind: Item['kind'],
  batch: number,
  ttlMs: number,
): Promise<string> {
  const claimed = await captureStatement((h) => claimMany(h, kind, batch, ttlMs), null);
  const fake = { id: PLACEHOLDER_ID, lease: PLACEHOLDER_LEASE } as Item;
  const completed = await captureStatement((h) => completeMany(h, [fake]), { id: PLACEHOLDER_ID });
  // pgbench reads a script line by line: comments go before the statement is flattened.
  const claimSql = inline(claimed.sql.replace(/--[^\n]*/g, ''), claimed.params, () => undefined);
  const tail = /\) SELECT (.+) FROM claimed ORDER BY created_at$/;
  if (!tail.test(claimSql)) {
    throw new Error(`claimMany's statement no longer ends the way this anchor expects:\n${claimSql}`);
  }
  const claimToProofs = claimSql.replace(
    tail,
    `), handed AS (SELECT $1 FROM claimed) SELECT json_agg(json_build_object('id', id, 'local', rtrim(lease, 'Z'), 'off', 0))::text AS proofs FROM handed`,
  );
  const proofs = JSON.stringify([{ id: PLACEHOLDER_ID, local: PLACEHOLDER_LEASE.slice(0, -1), off: 0 }]);
  const completeSql = inline(completed.sql, completed.params, (v) => (v === proofs ? ':proofs' : undefined));
  if (!completeSql.includes(':proofs')) {
    throw new Error(
      `completeMany no longer binds one proofs document the way this anchor expects:\n${completeSql}`,
    );
  }
  return `${claimToProofs} \\gset\n${completeSql};\n`;
}

export interface PgbenchResult {
  tps: number;
}

/**
 * Runs `script` with `clients` connections for `transactions` per client; tps excludes
 * connecting. `defines` are variables every client starts with (`-D`).
 */
export async function pgbench(
  url: string,
  script: string,
  clients: number,
  transactions: number,
  defines: Record<string, string> = {},
): Promise<PgbenchResult> {
  const dir = await mkdtemp(path.join(tmpdir(), 'leasehold-pgbench-'));
  const file = path.join(dir, 'script.sql');
  try {
    await writeFile(file, script);
    const threads = Math.min(clients, 2);
    const { stdout } = await run(
      'pgbench',
      [
        '-n',
        '-M',
        'prepared',
        '-c',
        String(clients),
        '-j',
        String(threads),
        '-t',
        String(transactions),
        ...Object.entries(defines).flatMap(([k, v]) => ['-D', `${k}=${v}`]),
        '-f',
        file,
        url,
      ],
      { maxBuffer: 16 * 1024 * 1024 },
    ).catch((err: Error & { stderr?: string }) => {
      throw new Error(`pgbench failed (is PostgreSQL's pgbench installed?): ${err.stderr ?? err.message}`);
    });
    const tps = /tps = ([\d.]+) \(without initial connection time\)/.exec(stdout);
    const failed = /number of failed transactions: (\d+)/.exec(stdout);
    if (!tps) throw new Error(`pgbench printed no tps:\n${stdout}`);
    if (failed && failed[1] !== '0') throw new Error(`pgbench had failed transactions:\n${stdout}`);
    return { tps: Number(tps[1]) };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
