import { defineConfig } from 'drizzle-kit';

// `npm run db:generate` writes migrations from the schema; `npm run db:migrate` applies them
// to DATABASE_URL (the embedded PGlite database migrates itself at start-up instead).
export default defineConfig({
  dialect: 'postgresql',
  schema: './src/db/schema.ts',
  out: './drizzle',
  dbCredentials: { url: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres' },
});
