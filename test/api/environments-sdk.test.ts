/**
 * The official SDK (the wire's judge) against the management API, in process: its own
 * request building, pagination and typed errors, with nothing mocked but the network.
 */
import Anthropic from '@anthropic-ai/sdk';
import {
  BetaEnvironmentArchivedError,
  BetaInvalidConfigTypeChangeError,
  BetaInvalidMetadataError,
} from '@anthropic-ai/sdk/resources/beta/environments/environments';
import { describe, expect, it } from 'vitest';
import { useTestDb } from '../helpers/db.js';
import { asAdmin } from '../helpers/management.js';

describe('the official SDK drives the environment endpoints', () => {
  const t = useTestDb('pg');
  const sdk = async () => {
    const { api, admin } = await asAdmin(t.db);
    let requests = 0;
    const client = new Anthropic({
      apiKey: admin,
      baseURL: 'http://leasehold.test',
      maxRetries: 0,
      fetch: (input, init) => {
        requests++;
        return Promise.resolve(api.app.request(input as string, init));
      },
    });
    return { client, requests: () => requests };
  };

  it('create, retrieve, update, archive and delete round-trip through the SDK types', async () => {
    const { client } = await sdk();
    const envs = client.beta.environments;
    const created = await envs.create({ name: 'sdk', config: { type: 'self_hosted' }, metadata: { a: '1' } });
    expect(created).toMatchObject({ type: 'environment', name: 'sdk', config: { type: 'self_hosted' } });
    expect(await envs.retrieve(created.id)).toEqual(created);
    const updated = await envs.update(created.id, { description: 'd', metadata: { a: null, b: '2' } });
    expect(updated).toMatchObject({ description: 'd', metadata: { b: '2' } });
    const archived = await envs.archive(created.id);
    expect(archived.archived_at).toEqual(expect.any(String));
    expect(await envs.delete(created.id)).toEqual({ id: created.id, type: 'environment_deleted' });
    await expect(envs.retrieve(created.id)).rejects.toBeInstanceOf(Anthropic.NotFoundError);
  });

  it('for await over list visits every environment once and stops', async () => {
    const { client, requests } = await sdk();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await client.beta.environments.create({ name: `e${i}` })).id);
    const before = requests();
    const seen: string[] = [];
    for await (const env of client.beta.environments.list({ limit: 2 })) seen.push(env.id);
    expect(seen).toEqual(ids.reverse());
    // Three pages of 2, 2 and 1: no trailing empty page, no endless loop.
    expect(requests() - before).toBe(3);
  });

  it('raises the typed errors the SDK knows by error_code', async () => {
    const { client } = await sdk();
    const envs = client.beta.environments;
    const env = await envs.create({ name: 'typed' });
    await expect(envs.update(env.id, { config: { type: 'self_hosted' } })).rejects.toBeInstanceOf(
      BetaInvalidConfigTypeChangeError,
    );
    await expect(envs.update(env.id, { metadata: { ['k'.repeat(65)]: 'v' } })).rejects.toBeInstanceOf(
      BetaInvalidMetadataError,
    );
    await envs.archive(env.id);
    await expect(envs.update(env.id, { name: 'x' })).rejects.toBeInstanceOf(BetaEnvironmentArchivedError);
  });
});
