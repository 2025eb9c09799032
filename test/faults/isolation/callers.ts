/**
 * Who calls in the isolation matrix: no key, malformed keys, keys in the query string, wrong
 * secrets, revoked and expired keys of every kind, another environment's key, and the three
 * live credentials, each of which is refused wherever its lane is not documented.
 */
import type { Credential } from '../../../src/api/openapi.js';
import type { Key, World } from './world.js';

export type Lane = Exclude<Credential, 'none'>;

export interface Caller {
  name: string;
  /** The fault it stands for, for the summary. */
  fault: string;
  /** The lane of a credential the server must honour; null for one it must refuse outright. */
  lane: Lane | null;
  /** An environment key's environment. */
  side?: 'own' | 'foreign';
  /** A secret the server must treat exactly like an unknown one (revoked, expired, wrong). */
  dead?: boolean;
  headers(w: World): Record<string, string>;
  query?(w: World): string;
}

const bearer = (k: Key) => ({ authorization: `Bearer ${k.secret}` });
/** The same length, prefix and alphabet as the real secret; only the last character differs. */
const wrong = (k: Key) => ({
  authorization: `Bearer ${k.secret.slice(0, -1)}${k.secret.endsWith('A') ? 'B' : 'A'}`,
});
const inQuery = (k: Key) =>
  ['api_key', 'key', 'access_token', 'x-api-key', 'authorization']
    .map((p) => `${p}=${encodeURIComponent(p === 'authorization' ? `Bearer ${k.secret}` : k.secret)}`)
    .join('&');

export const CALLERS: Caller[] = [
  { name: 'no credentials', fault: 'no key', lane: null, headers: () => ({}) },
  { name: 'an empty Bearer', fault: 'malformed', lane: null, headers: () => ({ authorization: 'Bearer ' }) },
  {
    name: 'a Basic authorization',
    fault: 'malformed',
    lane: null,
    headers: () => ({ authorization: 'Basic YWRtaW46YWRtaW4=' }),
  },
  {
    name: 'a live admin secret under another scheme',
    fault: 'malformed',
    lane: null,
    headers: (w) => ({ authorization: `Token ${w.admin.live.secret}` }),
  },
  {
    name: 'a live admin secret with trailing junk',
    fault: 'malformed',
    lane: null,
    dead: true,
    headers: (w) => ({ authorization: `Bearer ${w.admin.live.secret} x` }),
  },
  {
    name: 'two x-api-key values',
    fault: 'malformed',
    lane: null,
    headers: (w) => ({ 'x-api-key': `${w.admin.live.secret}, ${w.admin.live.secret}` }),
  },
  {
    name: 'a revoked Bearer beside a live x-api-key',
    fault: 'malformed',
    lane: null,
    dead: true,
    headers: (w) => ({ ...bearer(w.admin.revoked), 'x-api-key': w.admin.live.secret }),
  },
  {
    name: 'an admin key in the query string',
    fault: 'key in query',
    lane: null,
    headers: () => ({}),
    query: (w) => inQuery(w.admin.live),
  },
  {
    name: 'an environment key in the query string',
    fault: 'key in query',
    lane: null,
    headers: () => ({}),
    query: (w) => inQuery(w.own.key),
  },
  {
    name: 'a wrong admin secret',
    fault: 'wrong secret',
    lane: null,
    dead: true,
    headers: (w) => wrong(w.admin.live),
  },
  {
    name: 'a wrong environment secret',
    fault: 'wrong secret',
    lane: null,
    dead: true,
    headers: (w) => wrong(w.own.key),
  },
  {
    name: 'a revoked admin key',
    fault: 'revoked',
    lane: null,
    dead: true,
    headers: (w) => bearer(w.admin.revoked),
  },
  {
    name: 'a revoked platform key',
    fault: 'revoked',
    lane: null,
    dead: true,
    headers: (w) => ({ 'x-api-key': w.platform.revoked.secret }),
  },
  {
    name: 'a revoked environment key',
    fault: 'revoked',
    lane: null,
    dead: true,
    headers: (w) => bearer(w.own.revokedKey),
  },
  {
    name: 'an expired admin key',
    fault: 'expired',
    lane: null,
    dead: true,
    headers: (w) => bearer(w.admin.expired),
  },
  {
    name: 'an expired platform key',
    fault: 'expired',
    lane: null,
    dead: true,
    headers: (w) => bearer(w.platform.expired),
  },
  {
    name: 'an expired environment key',
    fault: 'expired',
    lane: null,
    dead: true,
    headers: (w) => bearer(w.own.expiredKey),
  },
  {
    name: 'another environment’s key',
    fault: 'foreign env key',
    lane: 'environment_key',
    side: 'foreign',
    headers: (w) => bearer(w.foreign.key),
  },
  {
    name: 'the own environment key',
    fault: 'env key off its lane',
    lane: 'environment_key',
    side: 'own',
    headers: (w) => bearer(w.own.key),
  },
  {
    name: 'a platform API key',
    fault: 'wrong scope',
    lane: 'platform_api_key',
    headers: (w) => bearer(w.platform.live),
  },
  {
    name: 'an admin API key',
    fault: 'wrong lane',
    lane: 'admin_api_key',
    headers: (w) => bearer(w.admin.live),
  },
];
