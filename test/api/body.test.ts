import { request } from 'node:http';
import { connect } from 'node:net';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { issueEnvironmentKey } from '../../src/auth/credentials.js';
import { maybeRow } from '../../src/db/handle.js';
import { enqueue } from '../../src/queue/enqueue.js';
import { apiKey, environmentWithKey, testApi } from '../helpers/api.js';
import { useTestDb } from '../helpers/db.js';
import { createEnvironment } from '../helpers/factories.js';
import { expectError } from '../helpers/management.js';
import { useNodeServer } from '../helpers/server.js';

/**
 * Sends `head` and `body` over a raw socket and ends the connection without waiting for an
 * answer: what a client that dies mid-upload, or frames its chunks wrongly, leaves behind.
 */
async function sendAndHangUp(port: number, head: string, body: string, waitMs: number): Promise<void> {
  const socket = connect(port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  socket.write(`${head}\r\n\r\n${body}`);
  if (waitMs > 0) await new Promise((r) => setTimeout(r, waitMs));
  socket.destroy();
}

describe('request bodies', () => {
  const t = useTestDb('pg');

  describe('in the app', () => {
    it('an escaped lone surrogate anywhere in a body is a 400, a surrogate pair is an ordinary character', async () => {
      const e = await environmentWithKey(t.db);
      const key = await apiKey(t.db, 'platform');
      const api = testApi(t.db);
      const enqueue = (metadata: string) =>
        api.call('POST', '/v1/platform/work', {
          key,
          body: `{"environment_id":"${e.environmentId}","session_id":"s1","kind":"tool_exec","metadata":${metadata}}`,
        });
      for (const lone of ['{"a":"\\udfff"}', '{"a":"x\\ud800"}', '{"\\udc00":"v"}']) {
        const res = await enqueue(lone);
        expect((await expectError(res, 400, 'invalid_request_error')).error.message).toMatch(/surrogate/);
      }
      const res = await enqueue('{"a":"\\ud83d\\ude00"}');
      expect(res.status).toBe(201);
      expect(((await res.json()) as { work: { metadata: Record<string, string> } }).work.metadata).toEqual({
        a: '😀',
      });
    });

    it('a body shorter than its Content-Length is a 400 and the route does not act', async () => {
      const e = await environmentWithKey(t.db);
      const key = await apiKey(t.db, 'platform');
      const whole = `{"environment_id":"${e.environmentId}","session_id":"s1","kind":"tool_exec"}`;
      // A runtime that hands over what arrived: a whole object, but short of what was declared.
      const res = await testApi(t.db).call('POST', '/v1/platform/work', {
        key,
        body: whole,
        headers: { 'content-length': String(whole.length + 10) },
      });
      expect((await expectError(res, 400, 'invalid_request_error')).error.message).toMatch(/incomplete/);
      const row = await maybeRow(
        t.db,
        sql`SELECT 1 FROM work_items WHERE environment_id = ${e.environmentId}`,
      );
      expect(row).toBeNull();
    });
  });

  describe('on the Node server', () => {
    const server = useNodeServer(t);

    const revokedAt = async (id: string) =>
      (
        await maybeRow<{ at: string | null }>(
          t.db,
          sql`SELECT revoked_at::text AS at FROM environment_keys WHERE id = ${id}`,
        )
      )?.at;

    /**
     * A revoke whose body breaks (`framing` says how it is sent, `body` is what arrives before
     * the hang-up) does nothing; the same revoke, well formed, is then served: the broken one
     * was refused, not lost.
     */
    async function brokenRevokeChangesNothing(framing: string, body: string): Promise<void> {
      const env = await createEnvironment(t.db);
      const issued = await issueEnvironmentKey(t.db, env, 'k', null);
      const admin = await apiKey(t.db, 'admin');
      const head = [
        `POST /v1/environments/${env}/keys/${issued.id}/revoke HTTP/1.1`,
        'host: 127.0.0.1',
        `authorization: Bearer ${admin}`,
        framing,
      ].join('\r\n');
      // Time for the server to dispatch on the headers before the body breaks off.
      await sendAndHangUp(server.port, head, body, 100);
      expect(await revokedAt(issued.id)).toBeNull();
      const res = await fetch(`${server.baseURL}/v1/environments/${env}/keys/${issued.id}/revoke`, {
        method: 'POST',
        headers: { authorization: `Bearer ${admin}` },
      });
      expect(res.status).toBe(204);
      expect(await revokedAt(issued.id)).not.toBeNull();
    }

    it('a route that takes no body does not act on a request whose chunked body breaks', async () => {
      await brokenRevokeChangesNothing('transfer-encoding: chunked', '2\r\n{}\r\nzz\r\n');
    });

    it('a route does not act on a request whose Content-Length body is cut short', async () => {
      await brokenRevokeChangesNothing('content-length: 10', '{}');
    });

    it('a route that takes no body refuses an oversized chunked one with 413 and does not act', async () => {
      const env = await createEnvironment(t.db);
      const admin = await apiKey(t.db, 'admin');
      const chunk = new Uint8Array(64 * 1024).fill(0x20);
      const res = await new Promise<number>((resolve, reject) => {
        const req = request(
          `${server.baseURL}/v1/environments/${env}`,
          // Node frames a DELETE body only when told to: unframed, the bytes would be a second request.
          { method: 'DELETE', headers: { authorization: `Bearer ${admin}`, 'transfer-encoding': 'chunked' } },
          (r) => {
            r.resume();
            resolve(r.statusCode ?? 0);
          },
        );
        req.on('error', (err: NodeJS.ErrnoException) =>
          err.code === 'EPIPE' || err.code === 'ECONNRESET' ? undefined : reject(err),
        );
        // Chunked (no Content-Length), 2 MiB in all: over the 1 MiB cap.
        for (let i = 0; i < 32; i++) req.write(chunk);
        req.end();
      });
      expect(res).toBe(413);
      const row = await maybeRow(t.db, sql`SELECT 1 FROM environments WHERE id = ${env}`);
      expect(row).not.toBeNull();
    });

    it('a request whose Transfer-Encoding does not end in chunked is refused before its route acts', async () => {
      const e = await environmentWithKey(t.db);
      const { work } = await enqueue(t.db, { ...e, kind: 'tool_exec' });
      const poll = `/v1/environments/${e.environmentId}/work/poll`;
      const socket = connect(server.port, '127.0.0.1');
      await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
      let raw = '';
      socket.on('data', (chunk: Buffer) => {
        raw += chunk.toString('utf8');
      });
      const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
      const head = [`GET ${poll} HTTP/1.1`, 'host: 127.0.0.1', `authorization: Bearer ${e.key}`];
      socket.write([...head, 'transfer-encoding: gzip', '', ''].join('\r\n'));
      await closed;
      // Node's parser answers (it fails on the body); the app must not have polled meanwhile:
      // the item is still there for the next poll, which was sent after the first was dispatched.
      expect(raw).toMatch(/^HTTP\/1\.1 400 /);
      const next = await fetch(`${server.baseURL}${poll}`, { headers: { authorization: `Bearer ${e.key}` } });
      expect(((await next.json()) as { id: string } | null)?.id).toBe(work.id);
    });

    it('a JSON body that parses but whose connection ends before its last chunk changes nothing', async () => {
      const env = await createEnvironment(t.db);
      const admin = await apiKey(t.db, 'admin');
      const json = '{"name":"renamed"}';
      const head = [
        `POST /v1/environments/${env} HTTP/1.1`,
        'host: 127.0.0.1',
        `authorization: Bearer ${admin}`,
        'content-type: application/json',
        'transfer-encoding: chunked',
      ].join('\r\n');
      // The whole object in one chunk, then the connection drops before the terminating 0-chunk.
      // Hung up at once, so the server meets the body already buffered and the connection gone.
      await sendAndHangUp(server.port, head, `${json.length.toString(16)}\r\n${json}\r\n`, 0);
      const name = async () =>
        (await maybeRow<{ name: string }>(t.db, sql`SELECT name FROM environments WHERE id = ${env}`))?.name;
      expect(await name()).not.toBe('renamed');
      const res = await fetch(`${server.baseURL}/v1/environments/${env}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
        body: json,
      });
      expect(res.status).toBe(200);
      expect(await name()).toBe('renamed');
    });
  });
});
