/**
 * Who a request acts as once its credential resolved: the workers of one environment, or an
 * API key of a scope. Its own file so the credential cache can hold principals without
 * importing the credentials that resolve them (which import the cache).
 */

export type ApiKeyScope = 'admin' | 'platform';

export type Principal =
  | { kind: 'environment'; environmentId: string; keyId: string }
  | { kind: 'api'; scope: ApiKeyScope; keyId: string };
