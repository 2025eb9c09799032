/**
 * Credentials at rest and in the compare (docs/guarantees.md): keys are
 * stored only as SHA-256 digests, compared in constant time after hashing, and no issued
 * secret reaches a table or the server's output.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { digestsEqual, hashSecret, mintSecret } from '../../src/auth/secrets.js';
import { rows } from '../../src/db/handle.js';
import { useTestDb } from '../helpers/db.js';
import { atScale, recordFault } from '../helpers/faults.js';
import { asAdmin } from '../helpers/management.js';
import { startServer } from '../helpers/server.js';
import { formCount, hits, sha256Hex } from './credentials/forms.js';
import { blankNonCode, findComparisons } from './credentials/scan.js';
import { exerciseKeys, tableDump } from './credentials/server.js';

const SRC = path.resolve(import.meta.dirname, '../../src');

/**
 * Comparisons on secret-like names that compare no secret. Each says why; an entry that no
 * longer matches anything is harmless.
 */
const ALLOWED: { name: string; file?: string; reason: string }[] = [
  { name: 'keyId', reason: 'a key’s public id (envkey_…/apikey_…), never its secret' },
  { name: 'identityKey', reason: 'a journal task’s identity (run, step, iteration, attempt), public' },
  {
    name: 'key',
    file: 'journal/replay.ts',
    reason: 'a tool call’s idempotency key, recorded in the journal',
  },
  { name: 'PG_FOREIGN_KEY_VIOLATION', reason: 'a SQLSTATE code' },
  {
    name: 'secret',
    file: 'auth/configured-admin-key.ts',
    reason:
      'the configured admin key against the value this app already ensured: both from the host’s configuration, neither from a caller',
  },
];

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = path.join(dir, f);
    if (statSync(p).isDirectory()) return sources(p);
    return p.endsWith('.ts') ? [p] : [];
  });
}

/** The body of `function name(…) {…}` in `src`, from the blanked code (strings and comments out). */
function functionBody(src: string, name: string): string {
  const code = blankNonCode(src);
  const at = code.indexOf(`function ${name}(`);
  if (at < 0) throw new Error(`no function ${name}`);
  let close = code.indexOf(')', at);
  while (code.slice(at, close + 1).split('(').length !== code.slice(at, close + 1).split(')').length)
    close = code.indexOf(')', close + 1);
  const open = code.indexOf('{', close);
  let depth = 0;
  for (let i = open; i < code.length; i++) {
    if (code[i] === '{') depth++;
    if (code[i] === '}' && --depth === 0) return code.slice(open, i + 1);
  }
  throw new Error(`unbalanced ${name}`);
}

describe('credentials at rest and in the compare', () => {
  const t = useTestDb('pg');

  it('the key tables hold only SHA-256 digests of the secrets issued through the API', async (ctx) => {
    const { admin, ok } = await asAdmin(t.db);
    const env = await ok<{ id: string }>('POST', '/v1/environments', {
      name: 'k',
      config: { type: 'self_hosted' },
    });
    type Issued = { id: string; key: string };
    const issued: Issued[] = [];
    for (const body of [{ name: 'a' }, { name: 'b', expires_in_seconds: 3600 }, { name: 'c' }])
      issued.push(await ok<Issued>('POST', `/v1/environments/${env.id}/keys`, body, 201));
    for (const body of [
      { name: 'a', scope: 'admin' },
      { name: 'p', scope: 'platform' },
      { name: 'q', scope: 'platform', expires_in_seconds: 60 },
    ])
      issued.push(await ok<Issued>('POST', '/v1/api_keys', body, 201));
    await ok('POST', `/v1/environments/${env.id}/keys/${issued[0]!.id}/revoke`, undefined, 204);
    await ok('POST', `/v1/api_keys/${issued[3]!.id}/revoke`, undefined, 204);
    const lists = JSON.stringify([
      await ok('GET', `/v1/environments/${env.id}/keys`),
      await ok('GET', '/v1/api_keys'),
    ]);

    const stored = await rows<{ id: string; keyHash: string; row: string }>(
      t.db,
      sql`SELECT id, key_hash AS "keyHash", row_to_json(k)::text AS row FROM environment_keys k
          UNION ALL SELECT id, key_hash, row_to_json(k)::text FROM api_keys k`,
    );
    const secrets = [admin, ...issued.map((k) => k.key)];
    for (const k of issued) {
      const row = stored.find((r) => r.id === k.id);
      expect(row?.keyHash, k.id).toBe(sha256Hex(k.key));
    }
    for (const r of stored) expect(r.keyHash).toMatch(/^[0-9a-f]{64}$/);
    expect(hits(stored.map((r) => r.row).join('\n'), secrets)).toEqual([]);
    // Lists show ids and names: neither a secret nor its digest.
    expect(hits(lists, secrets)).toEqual([]);
    for (const r of stored) expect(lists).not.toContain(r.keyHash);
    const columns = await rows<{ name: string }>(
      t.db,
      sql`SELECT column_name AS name FROM information_schema.columns
           WHERE table_name IN ('environment_keys', 'api_keys') AND table_schema = current_schema()`,
    );
    expect(columns.map((c) => c.name).filter((n) => /secret|token|plain|^key$/.test(n))).toEqual([]);

    recordFault(ctx, {
      load: `${secrets.length} keys (3 environment, 4 API incl. the bootstrap admin; 2 revoked, 2 expiring) issued through the API`,
      faults: 'secret read back from the key tables and the key lists',
      result: `${stored.length} rows, each key_hash = SHA-256 hex of its secret; ${formCount(secrets)} secret forms (whole, 16-char windows, hex/base64 of its bytes) searched: 0 found`,
    });
  });

  it('the compare path hashes first and compares digests with timingSafeEqual; src/ compares no secret with ===', (ctx) => {
    const credentials = readFileSync(path.join(SRC, 'auth/credentials.ts'), 'utf8');
    const resolve = functionBody(credentials, 'resolveCredential');
    expect(resolve.indexOf('hashSecret(secret)')).toBeGreaterThan(-1);
    expect(resolve.indexOf('digestsEqual(')).toBeGreaterThan(resolve.indexOf('hashSecret(secret)'));
    const equal = functionBody(readFileSync(path.join(SRC, 'auth/secrets.ts'), 'utf8'), 'digestsEqual');
    expect(equal).toContain('timingSafeEqual(');
    expect(equal).not.toMatch(/\b(for|while)\b/);

    const findings: string[] = [];
    let files = 0;
    for (const file of sources(SRC)) {
      files++;
      const rel = path.relative(SRC, file);
      for (const f of findComparisons(readFileSync(file, 'utf8'))) {
        if (ALLOWED.some((a) => a.name === f.name && (!a.file || a.file === rel))) continue;
        findings.push(`src/${rel}:${f.line} ${f.text}`);
      }
    }
    recordFault(ctx, {
      load: `${files} files under src/`,
      faults: '===, !==, ==, != on names like secret/token/key/proof/hash/digest; .equals(, Buffer.compare(',
      result: `${findings.length} violations (${ALLOWED.length} names allowed, each with a reason); resolveCredential hashes, then digestsEqual → timingSafeEqual`,
    });
    expect(findings).toEqual([]);
  });

  it('the scanner sees a secret compare wherever it hides, and nothing in strings, comments or regexes', () => {
    const src = [
      'if (row.keyHash === hash) x();',
      "if (secret == 'abc') x();",
      'if (a.proof !== b.proof) x();',
      'if (Buffer.from(x).equals(y)) x();',
      'if (secret === null || token.length === 43) x();',
      "const s = 'token === secret';",
      '// digest === other',
      'const r = /key==hash/;',
      // A template literal with substitutions (built so as not to be one here).
      ['const t = `', '{a}` + `digest === ', '{b === c}`;'].join('$'),
      'if (storedDigest(x) != given.digest) x();',
    ].join('\n');
    expect(findComparisons(src).map((f) => f.line)).toEqual([1, 2, 3, 10, 4]);
    expect(digestsEqual('a'.repeat(64), 'a'.repeat(64))).toBe(true);
    expect(digestsEqual('a'.repeat(64), `${'a'.repeat(63)}b`)).toBe(false);
    expect(digestsEqual('a'.repeat(64), 'a'.repeat(63))).toBe(false);
  });

  it('verify takes the same time whether a wrong secret differs in every byte or only the last', async (ctx) => {
    const calls = atScale(20_000, 50_000);
    const BATCH = 250;
    const secret = mintSecret('api');
    const stored = await hashSecret(secret);
    const flip = (c: string) => (c === 'A' ? 'B' : 'A');
    const far = secret.slice(0, 7) + [...secret.slice(7)].map(flip).join('');
    const near = secret.slice(0, -1) + flip(secret.slice(-1));
    const hexFlip = (c: string) => (c === '0' ? '1' : '0');
    const farDigest = [...stored].map(hexFlip).join('');
    const nearDigest = stored.slice(0, -1) + hexFlip(stored.slice(-1));
    let accepted = 0;
    const verifyBatch = async (presented: string) => {
      const start = process.hrtime.bigint();
      for (let i = 0; i < BATCH; i++) if (digestsEqual(stored, await hashSecret(presented))) accepted++;
      return Number(process.hrtime.bigint() - start) / BATCH;
    };
    const compareBatch = async (digest: string) => {
      const start = process.hrtime.bigint();
      for (let i = 0; i < BATCH; i++) if (digestsEqual(stored, digest)) accepted++;
      return Number(process.hrtime.bigint() - start) / BATCH;
    };
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const measure = async (batch: (x: string) => Promise<number>, a: string, b: string) => {
      const ta: number[] = [];
      const tb: number[] = [];
      await batch(a); // warm-up
      await batch(b);
      // Interleaved, alternating which goes first, so drift and noise fall on both alike.
      for (let round = 0; round < calls / BATCH; round++) {
        const first = round % 2 ? a : b;
        const second = first === a ? b : a;
        const t1 = await batch(first);
        const t2 = await batch(second);
        ta.push(first === a ? t1 : t2);
        tb.push(first === a ? t2 : t1);
      }
      return { a: median(ta), b: median(tb), delta: median(ta) - median(tb) };
    };
    const verify = await measure(verifyBatch, far, near);
    const compare = await measure(compareBatch, farDigest, nearDigest);
    const ns = (x: number) => `${x.toFixed(0)} ns`;
    recordFault(ctx, {
      load: `${calls.toLocaleString('en')} calls per class, in batches of ${BATCH}, interleaved`,
      faults:
        'wrong secret differing in every byte vs only the last; digest differing in every byte vs only the last',
      result: `verify (hash + compare) median ${ns(verify.a)} vs ${ns(verify.b)}, Δ ${ns(verify.delta)}; digestsEqual median ${ns(compare.a)} vs ${ns(compare.b)}, Δ ${ns(compare.delta)} (bound 2 µs)`,
    });
    expect(accepted).toBe(0);
    // Informational: a loose bound, since two shared cores make finer ones flaky.
    expect(Math.abs(verify.delta)).toBeLessThan(2_000);
    expect(Math.abs(compare.delta)).toBeLessThan(2_000);
  });

  it('no issued secret reaches a running server’s output or any table', async (ctx) => {
    const server = await startServer({ databaseUrl: t.url! });
    let used: Awaited<ReturnType<typeof exerciseKeys>>;
    try {
      used = await exerciseKeys(server.baseURL, server.adminKey);
    } finally {
      await server.stop();
    }
    const secrets = [server.adminKey, ...used.secrets];
    const output = server.output();
    const dump = await tableDump(t.db);
    const found = [...hits(output, secrets), ...hits(dump.text, secrets)];
    const hashesInOutput = secrets.map(sha256Hex).filter((h) => output.includes(h));
    const shaped = [...`${output}\n${dump.text}`.matchAll(/lh_(?:env|api)_[A-Za-z0-9_-]{8,}/g)].map(
      (m) => m[0],
    );
    recordFault(ctx, {
      load: `the Node server; ${secrets.length} secrets issued, used (${used.requests} requests: poll, ack, heartbeat, stop, enqueue, claim, complete, lists), mistyped, sent in the query string, revoked and reused`,
      faults: 'grep of the server output and a dump of every table for each secret',
      result: `${(output.length / 1024).toFixed(1)} KiB of output, ${dump.rows} rows in ${dump.tables} tables; ${formCount(secrets)} secret forms: ${found.length} hits; ${hashesInOutput.length} digests in the output; ${shaped.length} lh_ key-shaped strings`,
    });
    expect(found).toEqual([]);
    expect(hashesInOutput).toEqual([]);
    expect(shaped).toEqual([]);
  });
});
