/**
 * Mutators of everything around the body: query parameters (duplicated, malformed, raw
 * percent-garbage), list cursors, timestamps (a heartbeat echo, a lease proof), path ids
 * (`../`, `%00`, `%2F`, SQL), credentials (missing, garbled, duplicated, wrong lane, revoked),
 * the method and stray headers.
 */
import fc from 'fast-check';
import { newId } from '../../../src/ids.js';
import { hostileText, type Mutation, mutation } from './mutate-body.js';
import { Raw } from './request.js';
import { BAD_CREDENTIALS } from './world.js';

const BAD_QUERY_VALUES = [
  '',
  '-1',
  '0',
  '1.5',
  'NaN',
  'Infinity',
  '1e3',
  '0x10',
  ' 7',
  '7 ',
  '+5',
  '99999999999999999999999',
  '-0',
  '١٢',
  'true',
  'null',
  '[object Object]',
  '9'.repeat(401),
  '-9'.repeat(200),
];
const RAW_QUERIES = [
  '%zz=1',
  'limit=%',
  'page=%E0%A4%A',
  '&&&',
  '=x',
  'limit[]=1',
  'limit[a]=1',
  'block_ms=1&block_ms=2',
  '%00=%00',
  'page=%00',
  'expected_last_heartbeat=%ff%fe',
  `${'a'.repeat(8000)}=1`,
  'limit=1;limit=2',
  'include_archived=TRUE',
  'after_seq=1&after_seq=-1',
];

const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64url');
const BAD_CURSORS = [
  '',
  '=',
  'djF8',
  'not a cursor',
  '%2F%2B',
  'a'.repeat(201),
  b64('v1|2024-01-01T00:00:00Z|work_0000000000000000000000zz|extra'),
  b64('env1|2024-01-01T00:00:00Z|work_0000000000000000000000zz'),
  b64('v1|9999-12-31T23:59:59.999999Z|work_0000000000000000000000zz'),
  b64('v1|0001-01-01T00:00:00Z|work_0000000000000000000000zz'),
  b64('env1|0000-00-00T00:00:00Z|env_0000000000000000000000zz'),
  b64("v1|2024-01-01T00:00:00Z|work_'; DROP TABLE work_items--"),
  b64('v1|infinity|work_0000000000000000000000zz'),
  b64('v1|2024-02-30T00:00:00Z|work_0000000000000000000000zz'),
  b64('\u0000|\u0000|\u0000'),
  `${b64('v1|2024-01-01T00:00:00Z|work_0000000000000000000000zz')}==`,
];

export const BAD_STAMPS = [
  '2024-02-30T00:00:00Z',
  '2024-13-01T00:00:00Z',
  '0000-01-01T00:00:00Z',
  '294277-01-01T00:00:00Z',
  '2024-01-01T24:00:00Z',
  '2024-01-01T23:59:60Z',
  '2024-01-01T00:00:00+25:00',
  '2024-01-01T00:00:00+15:59',
  '2024-01-01T00:00:00.12345678901234567890Z',
  '2024-01-01 00:00:00Z',
  'infinity',
  '-infinity',
  'epoch',
  'now',
  'today',
  'allballs',
  '1700000000',
  'NO_HEARTBEAT ',
  'no_heartbeat',
  '2024-01-01T00:00:00Z\u0000',
  '\u202e2024-01-01T00:00:00Z',
  '9999-12-31T23:59:59.999999Z',
  '0001-01-01T00:00:00Z',
  '1969-12-31T23:59:59-00:00',
  '2024-01-01t00:00:00z',
  "2024-01-01T00:00:00Z' OR '1'='1",
];

const BAD_IDS = [
  '..',
  '..%2F..%2Fapi_keys',
  '%2e%2e',
  '%2F',
  '%00',
  'work_%00',
  "'%3B%20DROP%20TABLE%20work_items%3B--",
  '%27%20OR%20%271%27%3D%271',
  'x'.repeat(5000),
  '%',
  '%E0%A4%A',
  '%F0%9F%98%80',
  '%E2%80%AE',
  'null',
  '0',
  '-1',
  '*',
  '%252F',
  '%20',
  'env_0000000000000000000000uu',
  'WORK_0000000000000000000000ZZ',
  'sesn%2F..%2F',
];

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD'];

const JUNK_HEADERS: [string, string][] = [
  ['anthropic-worker-id', 'w'.repeat(257)],
  ['anthropic-worker-id', ' \u00e9\u00ff '],
  ['traceparent', '00-zzzz-yy-01'],
  ['traceparent', `00-${'0'.repeat(32)}-${'0'.repeat(16)}-01`],
  ['tracestate', 'a'.repeat(8000)],
  ['x-http-method-override', 'DELETE'],
  ['x-forwarded-for', "127.0.0.1' OR 1=1"],
  ['accept', 'text/html'],
  ['accept-encoding', 'gzip, br, zstd'],
  ['x-junk', 'j'.repeat(16 * 1024)],
  ['content-encoding', 'gzip'],
  ['transfer-encoding', 'gzip'],
];

export const requestMutators: fc.Arbitrary<Mutation>[] = [
  fc.tuple(fc.nat(), fc.constantFrom(...BAD_QUERY_VALUES)).map(([pick, v]) =>
    mutation('query-duplicate', v, (r, route) => {
      const names = route.query.length ? route.query.map((q) => q.name) : ['limit', 'page'];
      const name = names[pick % names.length]!;
      const first = r.query.find(([k]) => k === name)?.[1] ?? '1';
      return { ...r, query: [...r.query, [name, v], [name, first]] };
    }),
  ),
  fc
    .tuple(fc.nat(), fc.constantFrom(...BAD_QUERY_VALUES), fc.constantFrom(...RAW_QUERIES), fc.boolean())
    .map(([pick, v, raw, useRaw]) =>
      mutation('query-malformed', useRaw ? raw : v, (r, route) => {
        if (useRaw) return { ...r, query: [...r.query, ['', new Raw(raw)]] };
        const names = route.query.length ? route.query.map((q) => q.name) : ['limit'];
        const name = names[pick % names.length]!;
        return { ...r, query: [...r.query.filter(([k]) => k !== name), [name, v]] };
      }),
    ),
  fc
    .tuple(fc.constantFrom(...BAD_CURSORS), fc.string({ unit: 'binary', maxLength: 40 }), fc.boolean())
    .map(([bad, random, useRandom]) => {
      const page = useRandom ? b64(`v1|${random}`) : bad;
      return mutation('cursor', page.slice(0, 40), (r) => ({
        ...r,
        query: [...r.query.filter(([k]) => k !== 'page'), ['page', page]],
      }));
    }),
  fc.tuple(fc.constantFrom(...BAD_STAMPS), fc.nat()).map(([stamp, pick]) =>
    mutation('timestamp', stamp, (r) => {
      if (r.template.endsWith('/heartbeat')) {
        return {
          ...r,
          query: [
            ...r.query.filter(([k]) => k !== 'expected_last_heartbeat'),
            ['expected_last_heartbeat', stamp],
          ],
        };
      }
      if (
        r.body.kind === 'json' &&
        r.body.value &&
        typeof r.body.value === 'object' &&
        'lease' in r.body.value
      ) {
        return { ...r, body: { ...r.body, value: { ...r.body.value, lease: stamp } } };
      }
      const name = ['expected_last_heartbeat', 'page', 'after_seq'][pick % 3]!;
      return { ...r, query: [...r.query, [name, stamp]] };
    }),
  ),
  fc
    .tuple(fc.nat(), fc.constantFrom(...BAD_IDS), fc.boolean(), hostileText)
    .map(([pick, bad, minted, text]) =>
      mutation('path-id', minted ? 'unknown minted id' : bad, (r) => {
        const names = Object.keys(r.params);
        if (names.length === 0) return { ...r, template: `${r.template}/${bad}` };
        const name = names[pick % names.length]!;
        const value = minted
          ? newId(name === 'keyId' ? 'apikey' : name === 'environmentId' ? 'env' : 'work')
          : pick % 7 === 0
            ? text
            : new Raw(bad);
        return { ...r, params: { ...r.params, [name]: value } };
      }),
    ),
  fc.constantFrom(...BAD_CREDENTIALS).map((variant) =>
    mutation('credentials', variant, (r) => ({
      ...r,
      auth: { kind: 'bad', variant, lane: r.auth.lane },
    })),
  ),
  fc.constantFrom(...METHODS).map((method) =>
    mutation('method', method, (r) => ({
      ...r,
      method: method === r.method ? 'PATCH' : method,
      body: method === 'GET' || method === 'HEAD' ? { kind: 'none' } : r.body,
    })),
  ),
  fc.constantFrom(...JUNK_HEADERS).map(([name, value]) =>
    mutation('headers', `${name}: ${value.slice(0, 20)}`, (r) => ({
      ...r,
      headers: [...r.headers, [name, value]],
    })),
  ),
];
