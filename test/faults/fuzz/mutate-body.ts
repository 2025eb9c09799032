/**
 * Mutators of the request body: each takes a valid request and breaks its body one way —
 * wrong types, values past their bounds, hostile Unicode, JSON numbers no double holds,
 * prototype keys, duplicate keys, deep nesting, invalid UTF-8, a wrong Content-Type,
 * oversized bodies, server-owned fields. On a route without a body (GET) the same values go
 * into the query instead, since a GET cannot carry one through fetch.
 */
import fc from 'fast-check';
import type { BodySpec, FuzzRequest } from './request.js';
import type { RouteModel } from './routes.js';
import { Ref } from './schema-arbitrary.js';

export interface Mutation {
  cls: string;
  detail: string;
  apply(req: FuzzRequest, route: RouteModel): FuzzRequest;
}

export function mutation(cls: string, detail: string, apply: Mutation['apply']): Mutation {
  return { cls, detail, apply, toString: () => `${cls}:${detail}` } as Mutation;
}

type Path = (string | number)[];

/** Every position in a JSON value (objects' fields and arrays' elements), root excluded. */
function positions(value: unknown, at: Path = []): Path[] {
  if (!value || typeof value !== 'object' || value instanceof Ref) return [];
  const entries = Array.isArray(value) ? value.map((v, i) => [i, v] as const) : Object.entries(value);
  return entries.flatMap(([k, v]) => [[...at, k], ...positions(v, [...at, k])]);
}

function setAt(value: unknown, path: Path, leaf: unknown): unknown {
  if (path.length === 0) return leaf;
  const [head, ...rest] = path;
  const copy = (Array.isArray(value) ? [...value] : { ...(value as object) }) as Record<
    string | number,
    unknown
  >;
  copy[head!] = setAt(copy[head!], rest, leaf);
  return copy;
}

function jsonBody(req: FuzzRequest): { value: unknown; edits: Extract<BodySpec, { kind: 'json' }>['edits'] } {
  return req.body.kind === 'json'
    ? { value: req.body.value, edits: [...req.body.edits] }
    : { value: {}, edits: [] };
}

const hasNoBody = (req: FuzzRequest) => req.method === 'GET' || req.method === 'HEAD';

/** Puts `leaf` at a position picked by `pick` (the whole body when it has none, or now and then). */
function placeValue(req: FuzzRequest, route: RouteModel, pick: number, leaf: unknown): FuzzRequest {
  if (hasNoBody(req)) {
    const names = route.query.map((q) => q.name);
    const name = names.length ? names[pick % names.length]! : 'limit';
    const text = typeof leaf === 'string' ? leaf : (JSON.stringify(leaf) ?? 'undefined');
    return { ...req, query: [...req.query.filter(([k]) => k !== name), [name, text]] };
  }
  const { value, edits } = jsonBody(req);
  const spots = positions(value);
  const value2 = spots.length && pick % 5 !== 0 ? setAt(value, spots[pick % spots.length]!, leaf) : leaf;
  return { ...req, body: { kind: 'json', value: value2, edits } };
}

/** Puts raw JSON text at a position: a marker string first, swapped for the text when sent. */
function placeText(req: FuzzRequest, route: RouteModel, pick: number, text: string): FuzzRequest {
  if (hasNoBody(req)) return placeValue(req, route, pick, text);
  const marker = `@@fuzz${pick}@@`;
  const placed = placeValue(req, route, pick, marker);
  const body = placed.body as Extract<BodySpec, { kind: 'json' }>;
  return { ...placed, body: { ...body, edits: [...body.edits, { op: 'replace', marker, text }] } };
}

const wrongType = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.constant([]),
  fc.constant({}),
  fc.array(fc.nat(), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.nat(), { maxKeys: 2 }),
  fc.string({ maxLength: 8 }),
);

const pairs = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, 'v']));
const boundary = fc.oneof(
  fc.constantFrom('', ' ', '\t\n', 'x'.repeat(129), 'x'.repeat(257), 'x'.repeat(513), 'x'.repeat(2049)),
  fc.constantFrom('x'.repeat(16_385), 'y'.repeat(70_000), 0, -1, 3601, 315_360_001, 2 ** 53, 2 ** 53 + 2),
  fc.constantFrom(-(2 ** 63), 1e21, 0.5, 1e-7, -0.000001, Number.MAX_VALUE, -Number.MAX_VALUE),
  fc.constantFrom(17, 65, 1000).map(pairs),
  fc.constantFrom(
    { ['k'.repeat(65)]: 'v' },
    { ['k'.repeat(257)]: 'v' },
    { '': 'v' },
    { k: 'v'.repeat(16_385) },
  ),
);

const loneSurrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c));
export const hostileText = fc.oneof(
  fc.constantFrom(
    '\u0000',
    'a\u0000b',
    '\ud800',
    '\udfff',
    'x\ud83d',
    '\u202eevil\u202c',
    '\u200b',
    '\ufeff',
  ),
  fc.constantFrom(
    '\u2028\u2029',
    '👩‍👩‍👧‍👦',
    'e\u0301\u0301\u0301',
    'ﷺ',
    '\uffff',
    '\u{10ffff}',
    '\u0085',
    'مرحبا',
  ),
  fc.constantFrom(
    "'; DROP TABLE work_items; --",
    '" OR ""="',
    '$1',
    '%s%s%n',
    '{{7*7}}',
    `$\{jndi:x}`,
    '\\',
    '%00',
  ),
  fc.string({ unit: 'binary', maxLength: 12 }),
  fc.string({ unit: loneSurrogate, minLength: 1, maxLength: 3 }),
);

const numberLiterals = fc.constantFrom(
  '1e309',
  '-1e309',
  'NaN',
  'Infinity',
  '-0',
  '1e-400',
  '123456789012345678901234567890',
  '0x1F',
  '1_000',
  '01',
  '.5',
  '5.',
  '+1',
  '9007199254740993',
  '1E400',
);

const protoKeys = fc.constantFrom(
  '"__proto__":{"admin":true,"scope":"admin"}',
  '"constructor":{"prototype":{"admin":true}}',
  '"prototype":{"x":1}',
  '"__proto__":null',
  '"__proto__":"x"',
  '"hasOwnProperty":1',
  '"toString":"x"',
  '"valueOf":{}',
);

const SERVER_OWNED = [
  'id',
  'type',
  'state',
  'created_at',
  'updated_at',
  'lease_expires_at',
  'claims',
  'archived_at',
  'key',
  'key_hash',
  'scope',
  'environment_id',
  'org_id',
  'secret',
  'last_heartbeat',
  'acknowledged_at',
  'lane',
  'source',
  'revoked_at',
  'kind',
];

const BAD_UTF8 = [
  [0xff],
  [0xfe, 0xff],
  [0xc0, 0xaf],
  [0xe2, 0x82],
  [0xed, 0xa0, 0x80],
  [0xf4, 0x90, 0x80, 0x80],
  [0x80],
];

const CONTENT_TYPES = [
  null,
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=zz',
  'application/json; charset=utf-16',
  'application/xml',
  '*/*',
  'application/json, text/plain',
  'APPLICATION/JSON',
  'application/json;charset=latin1',
  '',
  'application/jsonx',
];

export const bodyMutators: fc.Arbitrary<Mutation>[] = [
  fc
    .tuple(fc.nat(), wrongType)
    .map(([pick, v]) =>
      mutation('type-confusion', JSON.stringify(v) ?? '', (r, route) => placeValue(r, route, pick, v)),
    ),
  fc
    .tuple(fc.nat(), boundary)
    .map(([pick, v]) =>
      mutation('boundary', (JSON.stringify(v) ?? '').slice(0, 40), (r, route) =>
        placeValue(r, route, pick, v),
      ),
    ),
  fc
    .tuple(fc.nat(), hostileText, fc.boolean())
    .map(([pick, s, asKey]) =>
      mutation('unicode', JSON.stringify(s), (r, route) =>
        asKey && !hasNoBody(r)
          ? placeText(r, route, pick, JSON.stringify({ [s]: 'v', m: { [s]: s } }))
          : placeValue(r, route, pick, s),
      ),
    ),
  fc
    .tuple(fc.nat(), numberLiterals)
    .map(([pick, lit]) => mutation('number-literal', lit, (r, route) => placeText(r, route, pick, lit))),
  fc.tuple(fc.nat(), protoKeys, fc.boolean()).map(([pick, key, nested]) =>
    mutation('proto-key', key, (r, route) => {
      if (nested || hasNoBody(r)) return placeText(r, route, pick, `{${key}}`);
      const { value, edits } = jsonBody(r);
      return { ...r, body: { kind: 'json', value, edits: [...edits, { op: 'insertFirst', text: key }] } };
    }),
  ),
  fc.tuple(fc.nat(), wrongType).map(([pick, v]) =>
    mutation('duplicate-key', JSON.stringify(v) ?? '', (r, route) => {
      const { value, edits } = jsonBody(r);
      const keys = value && typeof value === 'object' ? Object.keys(value) : [];
      if (hasNoBody(r) || keys.length === 0) return placeValue(r, route, pick, v);
      const text = `${JSON.stringify(keys[pick % keys.length])}:${JSON.stringify(v) ?? 'null'}`;
      return {
        ...r,
        body: {
          kind: 'json',
          value,
          edits: [...edits, { op: pick % 2 ? 'insertLast' : 'insertFirst', text }],
        },
      };
    }),
  ),
  fc
    .tuple(fc.nat(), fc.constantFrom(33, 200, 1000, 10_000, 100_000), fc.constantFrom('[', '{"a":'))
    .map(([pick, depth, open]) =>
      mutation('deep-nesting', `${open}×${depth}`, (r, route) => {
        const close = open === '[' ? ']' : '}';
        const text = `${open.repeat(depth)}1${close.repeat(depth)}`;
        if (hasNoBody(r)) return placeValue(r, route, pick, text.slice(0, 4000));
        return pick % 2 ? { ...r, body: { kind: 'text', text } } : placeText(r, route, pick, text);
      }),
    ),
  fc.tuple(fc.nat(), fc.constantFrom(...BAD_UTF8)).map(([pick, bytes]) =>
    mutation('invalid-utf8', bytes.map((b) => b.toString(16)).join(' '), (r, route) => {
      if (hasNoBody(r)) return placeText(r, route, pick, `%${bytes.map((b) => b.toString(16)).join('%')}`);
      const marker = `@@utf${pick}@@`;
      const placed = placeValue(r, route, pick, marker);
      const body = placed.body as Extract<BodySpec, { kind: 'json' }>;
      return { ...placed, body: { ...body, edits: [...body.edits, { op: 'bytes', marker, bytes }] } };
    }),
  ),
  fc
    .tuple(fc.constantFrom(...CONTENT_TYPES), fc.boolean())
    .map(([type, form]) =>
      mutation('content-type', String(type), (r) =>
        form && !hasNoBody(r)
          ? { ...r, contentType: type, body: { kind: 'text', text: 'name=x&scope=admin&metadata[a]=b' } }
          : { ...r, contentType: type },
      ),
    ),
  fc
    .tuple(fc.boolean(), fc.constantFrom('over', 'over', 'under'), fc.constantFrom('string', 'array'))
    .map(([streamed, size, shape]) =>
      mutation('oversized', `${size}-${shape}${streamed ? '-chunked' : ''}`, (r, route) => {
        const target = size === 'over' ? route.bodyCap + 1 : route.bodyCap - 64;
        if (hasNoBody(r)) return { ...r, query: [...r.query, ['pad', 'q'.repeat(64 * 1024)]] };
        const body: BodySpec =
          shape === 'string'
            ? { kind: 'repeat', head: '{"name":"', unit: 'a', times: target - 11, tail: '"}', streamed }
            : { kind: 'repeat', head: '[', unit: '1,', times: Math.ceil(target / 2), tail: '1]', streamed };
        return { ...r, body };
      }),
    ),
  fc
    .tuple(
      fc.constantFrom(...SERVER_OWNED),
      fc.oneof(fc.string({ maxLength: 10 }), fc.constantFrom('admin', true, 7, null)),
    )
    .map(([field, v]) =>
      mutation('mass-assignment', field, (r) => {
        if (hasNoBody(r)) return { ...r, query: [...r.query, [field, String(v)]] };
        const { value, edits } = jsonBody(r);
        const base = value && typeof value === 'object' && !Array.isArray(value) ? value : {};
        return { ...r, body: { kind: 'json', value: { ...base, [field]: v }, edits } };
      }),
    ),
];
