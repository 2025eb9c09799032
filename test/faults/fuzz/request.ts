/**
 * A fuzz request as data — route, path parameters, query pairs, headers, credential and body
 * — and how it becomes a fetch `Request`. Values may be `Ref`s into the world (resolved at
 * send time) or `Raw` text spliced in verbatim (the already-encoded bytes a mutator chose).
 * Requests stay small and printable: an oversized body is a recipe, made only when sent.
 */
import type { Credential } from '../../../src/api/openapi.js';
import { Ref } from './schema-arbitrary.js';

/** Text put into the URL or the body exactly as written, with no encoding. */
export class Raw {
  constructor(readonly text: string) {}
  toString(): string {
    return `Raw(${JSON.stringify(this.text.length > 80 ? `${this.text.slice(0, 80)}…` : this.text)})`;
  }
}

export type Value = string | Ref | Raw;

/** Edits made on the body's JSON text: what `JSON.stringify` cannot say (duplicate keys, 1e309). */
export type TextEdit =
  | { op: 'insertFirst'; text: string }
  | { op: 'insertLast'; text: string }
  | { op: 'replace'; marker: string; text: string }
  /** Puts raw bytes (invalid UTF-8, say) where the string `marker` was, inside its quotes. */
  | { op: 'bytes'; marker: string; bytes: number[] };

export type BodySpec =
  | { kind: 'none' }
  | { kind: 'json'; value: unknown; edits: TextEdit[] }
  | { kind: 'text'; text: string }
  | { kind: 'bytes'; bytes: number[] }
  /** `head` + `unit`×`times` + `tail`; `streamed` sends it chunked, with no Content-Length. */
  | { kind: 'repeat'; head: string; unit: string; times: number; tail: string; streamed: boolean };

/** What credential the request carries: its lane's proper key, or a named bad variant. */
export type AuthSpec =
  | { kind: 'lane'; lane: Credential }
  | { kind: 'bad'; variant: string; lane: Credential };

export interface FuzzRequest {
  /** `METHOD /path` of the documented route it was made for. */
  route: string;
  method: string;
  /** The route's path template (Hono form). */
  template: string;
  params: Record<string, Value>;
  query: [string, Value][];
  headers: [string, string][];
  /** undefined: `application/json` when there is a body; null: no Content-Type at all. */
  contentType?: string | null;
  auth: AuthSpec;
  body: BodySpec;
  /** The mutator classes applied, in order; empty for a valid request. */
  mutations: string[];
}

/** What a request needs from the world to be sent. */
export interface Resolver {
  resolve(value: Ref, params: Record<string, string>): string;
  /** The header pairs for a credential spec, given the resolved path parameters. */
  credential(auth: AuthSpec, params: Record<string, string>): [string, string][];
}

export interface WireRequest {
  method: string;
  /** Path and query, as sent. */
  target: string;
  headers: [string, string][];
  /** The body bytes, or a stream recipe for chunked bodies. */
  body: Uint8Array<ArrayBuffer> | { chunks: () => Iterable<Uint8Array>; size: number } | null;
  /** Resolved path parameters (for learning from the answer). */
  params: Record<string, string>;
}

const encoder = new TextEncoder();

function text(value: Value, world: Resolver, params: Record<string, string>, encode: boolean): string {
  if (value instanceof Raw) return value.text;
  const plain = value instanceof Ref ? world.resolve(value, params) : value;
  // A lone surrogate has no UTF-8 form: a client sends U+FFFD in its place, as fetch would.
  return encode ? encodeURIComponent(plain.replace(LONE_SURROGATE, '\ufffd')) : plain;
}

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** Replaces every `Ref` in a JSON value with its resolved string. */
function resolveDeep(value: unknown, world: Resolver, params: Record<string, string>): unknown {
  if (value instanceof Ref) return world.resolve(value, params);
  if (Array.isArray(value)) return value.map((v) => resolveDeep(v, world, params));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = resolveDeep(v, world, params);
    return out;
  }
  return value;
}

function applyEdits(json: string, edits: TextEdit[]): string {
  let out = json;
  for (const edit of edits) {
    if (edit.op === 'bytes') continue;
    if (edit.op === 'replace') out = out.replace(JSON.stringify(edit.marker), edit.text);
    else if (!out.startsWith('{') || !out.endsWith('}')) out = `{${edit.text}}`;
    else if (out === '{}') out = `{${edit.text}}`;
    else if (edit.op === 'insertFirst') out = `{${edit.text},${out.slice(1)}`;
    else out = `${out.slice(0, -1)},${edit.text}}`;
  }
  return out;
}

function bodyOf(spec: BodySpec, world: Resolver, params: Record<string, string>): WireRequest['body'] {
  switch (spec.kind) {
    case 'none':
      return null;
    case 'json': {
      const json = JSON.stringify(resolveDeep(spec.value, world, params)) ?? 'null';
      let bytes: Uint8Array<ArrayBuffer> = encoder.encode(applyEdits(json, spec.edits));
      for (const edit of spec.edits) if (edit.op === 'bytes') bytes = splice(bytes, edit.marker, edit.bytes);
      return bytes;
    }
    case 'text':
      return encoder.encode(spec.text);
    case 'bytes':
      return Uint8Array.from(spec.bytes);
    case 'repeat': {
      const head = encoder.encode(spec.head);
      const unit = encoder.encode(spec.unit.repeat(Math.max(1, Math.floor(65_536 / spec.unit.length))));
      const total = spec.unit.length * spec.times;
      const tail = encoder.encode(spec.tail);
      const chunks = function* () {
        yield head;
        for (let sent = 0; sent < total; sent += unit.length) {
          yield sent + unit.length <= total ? unit : unit.subarray(0, total - sent);
        }
        yield tail;
      };
      const size = head.length + total + tail.length;
      if (spec.streamed) return { chunks, size };
      const bytes = new Uint8Array(size);
      let at = 0;
      for (const c of chunks()) {
        bytes.set(c, at);
        at += c.length;
      }
      return bytes;
    }
  }
}

function splice(bytes: Uint8Array<ArrayBuffer>, marker: string, raw: number[]): Uint8Array<ArrayBuffer> {
  const needle = encoder.encode(marker);
  const at = Buffer.from(bytes).indexOf(Buffer.from(needle));
  if (at < 0) return bytes;
  return Uint8Array.from([...bytes.subarray(0, at), ...raw, ...bytes.subarray(at + needle.length)]);
}

/** The request as it goes on the wire: path, query, headers and body all resolved. */
export function toWire(req: FuzzRequest, world: Resolver): WireRequest {
  const params: Record<string, string> = {};
  let path = req.template;
  for (const [name, value] of Object.entries(req.params)) {
    if (!(value instanceof Raw)) params[name] = text(value, world, {}, false);
    path = path.replace(`:${name}`, () => text(value, world, {}, true));
  }
  const query = req.query
    .map(([k, v]) =>
      v instanceof Raw && k === '' ? v.text : `${encodeURIComponent(k)}=${text(v, world, params, true)}`,
    )
    .join('&');
  const body = bodyOf(req.body, world, params);
  const headers: [string, string][] = [...world.credential(req.auth, params), ...req.headers];
  const contentType = req.contentType === undefined ? (body ? 'application/json' : null) : req.contentType;
  if (contentType !== null) headers.push(['content-type', contentType]);
  return { method: req.method, target: query ? `${path}?${query}` : path, headers, body, params };
}

/** A fetch `Request` for the in-process app (`app.request`). */
export function toFetchRequest(wire: WireRequest, base = 'http://fuzz.local'): Request {
  const headers = new Headers();
  for (const [k, v] of wire.headers) headers.append(k, v);
  const noBody = wire.method === 'GET' || wire.method === 'HEAD';
  let body: BodyInit | null = null;
  if (!noBody && wire.body instanceof Uint8Array) body = wire.body;
  else if (!noBody && wire.body && !(wire.body instanceof Uint8Array)) {
    const chunks = wire.body.chunks()[Symbol.iterator]();
    body = new ReadableStream<Uint8Array>({
      pull(controller) {
        const next = chunks.next();
        if (next.done) controller.close();
        else controller.enqueue(next.value);
      },
    });
  }
  return new Request(`${base}${wire.target}`, {
    method: wire.method,
    headers,
    body,
    duplex: 'half',
  } as RequestInit);
}
