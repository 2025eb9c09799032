/**
 * Stands in for `@nats-io/nkeys` (and the tweetnacl it pulls in, ~16 KiB gzipped) in the
 * Worker bundles (wrangler.toml `[alias]`). The NATS client needs it only for nkey and JWT
 * (`.creds`) authentication, which Leasehold does not offer on any runtime: a journal connects
 * with what NATS_URL carries (a token or user and password in the URL). Should a server still
 * ask for a signed nonce, the connection fails with this message rather than an obscure one.
 */
function absent(): never {
  throw new Error(
    'nkey/JWT authentication is not available in the Worker build: put a token or user:password in NATS_URL',
  );
}

export const fromSeed = absent;
export const encode = absent;
