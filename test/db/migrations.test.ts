import { execFile } from 'node:child_process';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { generateDrizzleJson, generateMigration } from 'drizzle-kit/api';
import { sql } from 'drizzle-orm';
import pg from 'pg';
import { describe, expect, inject, it } from 'vitest';
import { connectPg, migratePg } from '../../src/db/drivers/node-pg.js';
import { migratePglite, openPglite } from '../../src/db/drivers/pglite.js';
import { rows, type SqlHandle } from '../../src/db/handle.js';
import * as schema from '../../src/db/schema.js';
import { adminQuery, databaseUrl } from '../helpers/postgres.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const MIGRATIONS = path.join(ROOT, 'drizzle');
const run = promisify(execFile);

interface Journal {
  entries: { idx: number }[];
}

/** drizzle-kit's list of a migrations folder's migrations. */
async function readJournal(folder = MIGRATIONS): Promise<Journal> {
  return JSON.parse(await readFile(path.join(folder, 'meta/_journal.json'), 'utf8')) as Journal;
}

async function latestSnapshot(): Promise<Parameters<typeof generateMigration>[0]> {
  const journal = await readJournal();
  const last = journal.entries.at(-1)!.idx.toString().padStart(4, '0');
  return JSON.parse(await readFile(path.join(MIGRATIONS, `meta/${last}_snapshot.json`), 'utf8'));
}

async function withDatabase<T>(fn: (url: string) => Promise<T>): Promise<T> {
  const name = `leasehold_t_${inject('templateDatabase').slice('leasehold_tpl_'.length)}_m${Math.random().toString(36).slice(2, 8)}`;
  await adminQuery(`CREATE DATABASE ${name}`);
  try {
    return await fn(databaseUrl(name));
  } finally {
    await adminQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  }
}

/** The schema as pg_dump prints it, minus the migrator's bookkeeping and per-dump noise (blank lines collapsed). */
async function dumpSchema(url: string): Promise<string> {
  const { stdout } = await run('pg_dump', [
    '--schema-only',
    '--no-owner',
    '--exclude-schema=drizzle',
    url,
  ]).catch((err: Error) => {
    throw new Error(`pg_dump (PostgreSQL's client tools) is needed for the drift check: ${err.message}`);
  });
  return stdout
    .split('\n')
    .filter((line) => !/^(--|\\(un)?restrict |SET |SELECT pg_catalog\.set_config)/.test(line))
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

/**
 * Functions the migrations write by hand: drizzle-kit cannot declare them, so a database it
 * builds from schema.ts lacks them, and the drift check compares everything else.
 */
const HAND_WRITTEN_FUNCTIONS = ['leasehold_refuse_unbound'];

/** `dump` without the hand-written functions' definitions, each of which it must hold. */
function withoutHandWrittenFunctions(dump: string): string {
  let rest = dump;
  for (const name of HAND_WRITTEN_FUNCTIONS) {
    const definition = new RegExp(`CREATE FUNCTION public\\.${name}\\([^]*?\\n\\$\\$;\\n*`);
    expect(rest, `the migrations define ${name}`).toMatch(definition);
    rest = rest.replace(definition, '');
  }
  return rest;
}

/** Constraints, indexes, columns and functions as the catalog defines them, engine-independent enough to compare. */
async function catalog(db: SqlHandle): Promise<string[]> {
  const found = await rows<{ item: string }>(
    db,
    sql`SELECT c.relname::text || ' ' || x.conname || ' ' || x.contype::text AS item
          FROM pg_constraint x JOIN pg_class c ON c.oid = x.conrelid
          JOIN pg_namespace n ON n.oid = c.relnamespace
         -- PostgreSQL 18 (PGlite) also records NOT NULL as constraints; columns cover those.
         WHERE n.nspname = 'public' AND x.contype <> 'n'
        UNION ALL
        SELECT tablename || ' ' || indexname || ' index' FROM pg_indexes WHERE schemaname = 'public'
        UNION ALL
        SELECT table_name || ' ' || column_name || ' ' || data_type || ' ' || is_nullable
          FROM information_schema.columns WHERE table_schema = 'public'
        UNION ALL
        SELECT 'function ' || p.proname::text || '(' || pg_get_function_arguments(p.oid) || ')'
          FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'public'`,
  );
  return found.map((r) => r.item).sort();
}

describe('migrations', () => {
  it('the generated migrations cover the schema: generating again would produce nothing', async () => {
    expect(await generateMigration(await latestSnapshot(), generateDrizzleJson(schema))).toEqual([]);
  });

  it('applied to an empty PostgreSQL database, they build exactly what the schema declares', async () => {
    await withDatabase(async (migratedUrl) => {
      const conn = connectPg(migratedUrl, { max: 1 });
      try {
        await migratePg(conn.db, MIGRATIONS);
      } finally {
        await conn.close();
      }
      await withDatabase(async (pushedUrl) => {
        // drizzle-kit builds the second database straight from schema.ts.
        await run(path.join(ROOT, 'node_modules/.bin/drizzle-kit'), ['push', '--force'], {
          cwd: ROOT,
          env: { ...process.env, DATABASE_URL: pushedUrl },
          timeout: 60_000,
        });
        const migrated = await dumpSchema(migratedUrl);
        expect(migrated).toContain('CREATE TABLE public.work_items');
        expect(withoutHandWrittenFunctions(migrated)).toBe(await dumpSchema(pushedUrl));
      });
    });
  });

  it('applied to an empty embedded PGlite database, they build the same tables, columns, indexes and functions', async () => {
    const lite = await openPglite();
    try {
      await migratePglite(lite.db, MIGRATIONS);
      await withDatabase(async (url) => {
        const conn = connectPg(url, { max: 1 });
        try {
          await migratePg(conn.db, MIGRATIONS);
          expect(await catalog(lite.db)).toEqual(await catalog(conn.db));
        } finally {
          await conn.close();
        }
      });
    } finally {
      await lite.close();
    }
  });
});

describe('migrating from many replicas at once', () => {
  it('processes that start together all succeed: one applies the migrations, the others wait', async () => {
    await withDatabase(async (url) => {
      const conns = Array.from({ length: 4 }, () => connectPg(url, { max: 2 }));
      try {
        await Promise.all(conns.map((c) => migratePg(c.db, MIGRATIONS, url)));
        const applied = await conns[0]!.db.execute(
          sql`SELECT count(*)::int AS n FROM drizzle.__drizzle_migrations`,
        );
        expect((applied.rows[0] as { n: number }).n).toBe((await readJournal()).entries.length);
      } finally {
        await Promise.all(conns.map((c) => c.close()));
      }
    });
  });
});

/** The migrations folder as a release that ended at migration `last` shipped it. */
async function migrationsUpTo(last: number): Promise<{ folder: string; done(): Promise<void> }> {
  const folder = await mkdtemp(path.join(tmpdir(), 'leasehold-migrations-'));
  await cp(MIGRATIONS, folder, { recursive: true });
  const journal = await readJournal(folder);
  journal.entries = journal.entries.filter((e) => e.idx <= last);
  await writeFile(path.join(folder, 'meta/_journal.json'), JSON.stringify(journal));
  return { folder, done: () => rm(folder, { recursive: true, force: true }) };
}

describe('upgrading a large deployment', () => {
  // The migrations that replace an index on work_items, each with the index it drops.
  const REPLACING = ['0008_claim_indexes_by_state', '0010_poll_indexes_by_state'];

  it('indexes built CONCURRENTLY ahead of the migrations that replace them are found, not built again, and the database ends as a fresh one', async () => {
    await withDatabase(async (url) => {
      const before = await migrationsUpTo(7);
      const conn = connectPg(url, { max: 1 });
      const client = new pg.Client({ connectionString: url });
      try {
        await migratePg(conn.db, before.folder, url);
        await client.connect();
        // What docs/deployment.md asks of a large deployment: the same definitions, built
        // CONCURRENTLY (outside any transaction) while the old release still serves.
        let prebuilt = 0;
        for (const tag of REPLACING) {
          const text = await readFile(path.join(MIGRATIONS, `${tag}.sql`), 'utf8');
          for (const stmt of text.split('--> statement-breakpoint')) {
            if (!/^\s*CREATE INDEX/.test(stmt)) continue;
            await client.query(stmt.replace('CREATE INDEX', 'CREATE INDEX CONCURRENTLY'));
            prebuilt++;
          }
        }
        expect(prebuilt).toBe(4);

        await migratePg(conn.db, MIGRATIONS, url);
        const { rows: indexes } = await client.query<{ name: string; valid: boolean }>(
          `SELECT c.relname AS name, i.indisvalid AS valid FROM pg_index i
             JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_class t ON t.oid = i.indrelid
            WHERE t.relname = 'work_items' ORDER BY 1`,
        );
        expect(indexes.filter((i) => !i.valid)).toEqual([]);
        // The upgraded database is the one a fresh install builds: old indexes gone, none twice.
        const fresh = await withDatabase(async (freshUrl) => {
          const c = connectPg(freshUrl, { max: 1 });
          try {
            await migratePg(c.db, MIGRATIONS, freshUrl);
          } finally {
            await c.close();
          }
          return dumpSchema(freshUrl);
        });
        expect(await dumpSchema(url)).toBe(fresh);
      } finally {
        await client.end().catch(() => {});
        await conn.close();
        await before.done();
      }
    });
  });
});
