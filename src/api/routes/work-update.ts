import type { Hono } from 'hono';
import * as z from 'zod/mini';
import { updateMetadata } from '../../queue/index.js';
import { API_KEY, authorize } from '../auth.js';
import { MAX_PATCH_BODY_BYTES, parseWith, readJson } from '../body.js';
import { badRequest } from '../errors.js';
import { document } from '../openapi.js';
import { reply } from '../reply.js';
import type { AppEnv } from '../types.js';
import { toWireWork, wireWorkSchema } from '../wire.js';
import { environmentId, WORK_BASE, workId } from './work-scope.js';

/**
 * Caps: enough for routing labels and ids, not a blob store. The key count holds for a patch
 * and for the item once the patch is applied — patches accumulate, so without the second an
 * item's metadata could grow without bound, one capped patch at a time. Together they bound
 * an item's metadata to 64 × (256 + 16,384) characters, about 1 M.
 */
export const MAX_METADATA_PAIRS = 64;
export const MAX_METADATA_KEY = 256;
export const MAX_METADATA_VALUE = 16 * 1024;

const metadataPatch = z
  .record(
    z
      .string()
      .check(
        z.minLength(1, 'metadata keys must not be empty'),
        z.maxLength(MAX_METADATA_KEY, `a metadata key may be at most ${MAX_METADATA_KEY} characters`),
      ),
    z.nullable(
      z
        .string()
        .check(
          z.maxLength(MAX_METADATA_VALUE, `a metadata value may be at most ${MAX_METADATA_VALUE} characters`),
        ),
    ),
  )
  .check(
    z.refine(
      (m) => Object.keys(m).length <= MAX_METADATA_PAIRS,
      `a patch may set or delete at most ${MAX_METADATA_PAIRS} keys`,
    ),
  );

const workUpdateBody = z.strictObject({ metadata: metadataPatch });

/**
 * POST /work/{id} `{metadata: {k: string | null}}` — a string upserts, null deletes, omitted
 * keys stay; applied atomically. API keys only. A patch that would leave the item with more
 * than 64 keys is a 400 and changes nothing. The body is checked before the id, so a
 * bad body is a 400 even for an id that would be a 404.
 */
export function registerWorkUpdate(app: Hono<AppEnv>): void {
  document({
    method: 'post',
    path: `${WORK_BASE}/:workId`,
    summary: 'Update work item metadata (string upserts, null deletes)',
    credentials: ['admin_api_key', 'platform_api_key'],
    body: workUpdateBody,
    responses: { 200: { description: 'the work item', schema: wireWorkSchema } },
  });
  app.post(`${WORK_BASE}/:workId`, async (c) => {
    const env = environmentId(c);
    await authorize(c, API_KEY, env);
    const body = (await readJson(c, MAX_PATCH_BODY_BYTES)) ?? {};
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      throw badRequest('request body must be a JSON object');
    }
    if (!('metadata' in body) || (body as { metadata: unknown }).metadata === null) {
      const unknown = Object.keys(body).find((k) => k !== 'metadata');
      throw badRequest(unknown ? `unknown field "${unknown}"` : 'metadata is required');
    }
    const { metadata } = parseWith(workUpdateBody, body);
    const upserts: Record<string, string> = {};
    const deletes: string[] = [];
    for (const [k, v] of Object.entries(metadata)) {
      if (v === null) deletes.push(k);
      else upserts[k] = v;
    }
    const options = { maxPairs: MAX_METADATA_PAIRS };
    const work = await updateMetadata(c.get('deps').db, env, workId(c), upserts, deletes, options);
    return reply(c, toWireWork(work));
  });
}
