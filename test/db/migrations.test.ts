import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { generateDrizzleJson, generateMigration } from 'drizzle-kit/api';
import { sql } from 'drizzle-orm';
import { describe, expect, inject, it } from 'vitest';
import { connectPg, migratePg } from '../../src/db/drivers/node-pg.js';
import { migratePglite, openPglite } from '../../src/db/drivers/pglite.js';
import { rows, type SqlHandle } from '../../src/db/handle.js';
import * as schema from '../../src/db/schema.js';
import { adminQuery, databaseUrl } from '../helpers/postgres.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const MIGRATIONS = path.join(ROOT, 'drizzle');
const run = promisify(execFile);

async function latestSnapshot(): Promise<Parameters<typeof generateMigration>[0]> {
  const journal = JSON.parse(await readFile(path.join(MIGRATIONS, 'meta/_journal.json'), 'utf8')) as {
    entries: { idx: number }[];
  };
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

/** The schema as pg_dump prints it, minus the migrator's bookkeeping and per-dump noise. */
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
    .trim();
}

/** Constraints and indexes as the catalog defines them, engine-independent enough to compare. */
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
          FROM information_schema.columns WHERE table_schema = 'public'`,
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
        expect(migrated).toBe(await dumpSchema(pushedUrl));
      });
    });
  });

  it('applied to an empty embedded PGlite database, they build the same tables, columns and indexes', async () => {
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
        expect((applied.rows[0] as { n: number }).n).toBe(
          (
            JSON.parse(await readFile(path.join(MIGRATIONS, 'meta/_journal.json'), 'utf8')) as {
              entries: unknown[];
            }
          ).entries.length,
        );
      } finally {
        await Promise.all(conns.map((c) => c.close()));
      }
    });
  });
});
