import type { Hono } from 'hono';
import { resolveAgent } from '../../agents/index.js';
import { getEnvironment } from '../../environments/index.js';
import { isMintedId, newId } from '../../ids.js';
import { openSession } from '../../loop/index.js';
import { API_KEY, authorize } from '../auth.js';
import { parseWith, readJson } from '../body.js';
import { badRequest, notFound } from '../errors.js';
import { document, errorEnvelope } from '../openapi.js';
import { reply } from '../reply.js';
import type { AppEnv } from '../types.js';
import { checkedMetadata } from './environment-body.js';
import { codedBadRequest } from './management-scope.js';
import { createSessionBody, normalizeEvent } from './session-body.js';
import { SESSIONS } from './session-scope.js';
import { toWireSession, wireSessionSchema } from './session-wire.js';

/**
 * POST /v1/sessions — a session of an agent in a self_hosted environment, idle, with the
 * agent version it names snapshotted whole; `initial_events` (user messages) are appended in
 * the same transaction, so the first turn is enqueued with it. Refused with a 400 naming the
 * field: what would only fail later — resources (the worker cannot mount them here: a
 * memory_store without a sessions token makes it fail the item), vaults, a budget (nothing
 * here prices a turn), outcomes — and a cloud environment (no cloud executor runs its tools).
 */
export function registerSessionsCreate(app: Hono<AppEnv>): void {
  document({
    method: 'post',
    path: SESSIONS,
    summary: 'Create a session',
    credentials: ['admin_api_key', 'platform_api_key'],
    body: createSessionBody,
    responses: {
      200: { description: 'the session', schema: wireSessionSchema },
      400: {
        description: 'a field Leasehold cannot honour, named; a cloud or archived environment',
        schema: errorEnvelope,
      },
      404: { description: 'no such agent or environment', schema: errorEnvelope },
    },
  });
  app.post(SESSIONS, async (c) => {
    await authorize(c, API_KEY);
    const body = parseWith(createSessionBody, await readJson(c));
    if (body.resources?.length)
      throw badRequest(
        'resources: Leasehold cannot mount session resources into a self_hosted worker; send none',
      );
    if (body.vault_ids?.length) throw badRequest('vault_ids: vaults are not supported here');
    if (body.budget != null)
      throw badRequest('budget: Leasehold prices no turn, so it cannot enforce a budget');
    const initial = (body.initial_events ?? []).map((e, i) => {
      if (e.type !== 'user.message') throw badRequest(`initial_events.${i}: ${e.type} is not supported here`);
      return normalizeEvent(e);
    });
    const metadata = checkedMetadata(body.metadata) ?? {};
    const { db } = c.get('deps');
    const environment = isMintedId(body.environment_id, 'env')
      ? await getEnvironment(db, body.environment_id)
      : null;
    if (!environment) throw notFound(`environment ${body.environment_id} not found`);
    if (environment.kind !== 'self_hosted') {
      throw badRequest(
        'environment_id: sessions run only in self_hosted environments here (no cloud executor runs their tools yet)',
      );
    }
    if (environment.archivedAt !== null)
      throw codedBadRequest('environment_id: the environment is archived', 'environment_archived');
    const ref =
      typeof body.agent === 'string'
        ? { id: body.agent }
        : { id: body.agent.id, version: body.agent.version };
    const agent = await resolveAgent(db, ref);
    if (!agent) throw notFound(`agent ${ref.id}${ref.version ? ` version ${ref.version}` : ''} not found`);
    const session = await openSession(
      db,
      {
        id: newId('sess'),
        environmentId: environment.id,
        agent,
        title: body.title ?? null,
        metadata,
        resources: [],
      },
      initial,
    );
    if (initial.length > 0) c.get('deps').turnEnqueued?.();
    return reply(c, toWireSession(session));
  });
}
