/**
 * `key create|list|revoke` (environment keys) and `api-key create|list|revoke`, with the admin
 * API key. A new secret is printed once, as the API shows it once.
 */
import { expectPositionals, integer, text } from '../args.js';
import { seg } from '../client.js';
import type { Command, CommandDef } from '../context.js';
import { UsageError } from '../errors.js';
import { formatRecord, formatTable } from '../table.js';

interface WireKey {
  id: string;
  key?: string;
  name: string;
  scope?: string;
  created_at: string;
  expires_at: string | null;
}

/** Ten years, the API's own bound on expires_in_seconds. */
const MAX_EXPIRES_IN = 10 * 365 * 24 * 60 * 60;
const expiryOption = { 'expires-in': { type: 'string' } } as const;

function expiry(cmd: Command): Record<string, number> {
  const seconds = integer(cmd.values, 'expires-in', 0, 1, MAX_EXPIRES_IN);
  return seconds ? { expires_in_seconds: seconds } : {};
}

function showIssued(cmd: Command, key: WireKey) {
  if (cmd.json) return cmd.out.json(key);
  cmd.out.text(
    formatRecord([
      ['id', key.id],
      ['name', key.name],
      ...(key.scope ? [['scope', key.scope] as const] : []),
      ['expires', key.expires_at ?? 'never'],
      ['secret', key.key],
    ]),
  );
  cmd.out.note('the secret is shown once: keep it now');
}

function showList(cmd: Command, page: { data: WireKey[] }, withScope: boolean) {
  if (cmd.json) return cmd.out.json(page);
  const headers = withScope
    ? ['ID', 'NAME', 'SCOPE', 'CREATED', 'EXPIRES']
    : ['ID', 'NAME', 'CREATED', 'EXPIRES'];
  cmd.out.text(
    formatTable(
      headers,
      page.data.map((k) =>
        withScope
          ? [k.id, k.name, k.scope, k.created_at, k.expires_at ?? 'never']
          : [k.id, k.name, k.created_at, k.expires_at ?? 'never'],
      ),
    ),
  );
}

function showRevoked(cmd: Command, id: string) {
  if (cmd.json) return cmd.out.json({ id, revoked: true });
  cmd.out.text(`revoked ${id}\n`);
}

export const keyCommands: CommandDef[] = [
  {
    name: 'key create',
    usage: '<environment_id> <name> [--expires-in seconds]',
    summary: 'issue an environment key (self_hosted environments)',
    details: 'Admin API key. Prints the secret once.',
    options: expiryOption,
    async run(cmd) {
      const [env, name] = expectPositionals(cmd.positionals, ['environment_id', 'name']);
      const key = await cmd.client.post(`/v1/environments/${seg(env!)}/keys`, { name, ...expiry(cmd) });
      showIssued(cmd, key as WireKey);
    },
  },
  {
    name: 'key list',
    usage: '<environment_id>',
    summary: 'list an environment’s keys (never their secrets)',
    details: 'Admin API key.',
    async run(cmd) {
      const [env] = expectPositionals(cmd.positionals, ['environment_id']);
      showList(
        cmd,
        (await cmd.client.get(`/v1/environments/${seg(env!)}/keys`)) as { data: WireKey[] },
        false,
      );
    },
  },
  {
    name: 'key revoke',
    usage: '<environment_id> <key_id>',
    summary: 'revoke an environment key (idempotent)',
    details: 'Admin API key.',
    async run(cmd) {
      const [env, id] = expectPositionals(cmd.positionals, ['environment_id', 'key_id']);
      await cmd.client.post(`/v1/environments/${seg(env!)}/keys/${seg(id!)}/revoke`);
      showRevoked(cmd, id!);
    },
  },
  {
    name: 'api-key create',
    usage: '<name> --scope admin|platform [--expires-in seconds]',
    summary: 'issue an API key',
    details: 'Admin API key. Prints the secret once.',
    options: { scope: { type: 'string' }, ...expiryOption },
    async run(cmd) {
      const [name] = expectPositionals(cmd.positionals, ['name']);
      const scope = text(cmd.values, 'scope');
      if (scope !== 'admin' && scope !== 'platform')
        throw new UsageError('--scope must be admin or platform');
      showIssued(cmd, (await cmd.client.post('/v1/api_keys', { name, scope, ...expiry(cmd) })) as WireKey);
    },
  },
  {
    name: 'api-key list',
    usage: '',
    summary: 'list API keys (never their secrets)',
    details: 'Admin API key.',
    async run(cmd) {
      expectPositionals(cmd.positionals, []);
      showList(cmd, (await cmd.client.get('/v1/api_keys')) as { data: WireKey[] }, true);
    },
  },
  {
    name: 'api-key revoke',
    usage: '<key_id>',
    summary: 'revoke an API key (idempotent)',
    details: 'Admin API key.',
    async run(cmd) {
      const [id] = expectPositionals(cmd.positionals, ['key_id']);
      await cmd.client.post(`/v1/api_keys/${seg(id!)}/revoke`);
      showRevoked(cmd, id!);
    },
  },
];
