/**
 * Valid values from a route's own request schema: the zod schema the route validates with,
 * rendered by `z.toJSONSchema` exactly as `GET /openapi.json` documents it, turned into a
 * fast-check arbitrary. Fields whose validity is not in the schema (ids that must exist, a
 * lease proof, a cursor) take a `Ref` into the fuzz world instead, by field name.
 *
 * Glossary: a *hint* overrides the arbitrary of a field by its name; a `Ref` names a pool of
 * live values (`pool`) and which one to take (`pick`), resolved when the request is sent, so
 * a request made from a seed means the same thing whatever the world holds by then.
 */
import fc from 'fast-check';
import * as z from 'zod/mini';

export interface JsonSchema {
  type?: string | string[];
  const?: unknown;
  enum?: unknown[];
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: JsonSchema | boolean;
  propertyNames?: JsonSchema;
  items?: JsonSchema;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  maxItems?: number;
}

/** A value taken from the world when the request is sent. */
export class Ref {
  constructor(
    readonly pool: string,
    readonly pick: number,
  ) {}
  toString(): string {
    return `Ref(${this.pool}#${this.pick})`;
  }
}

export const ref = (pool: string): fc.Arbitrary<Ref> => fc.nat().map((n) => new Ref(pool, n));

export type Hints = Record<string, fc.Arbitrary<unknown>>;

/** The JSON Schema of `schema` as the OpenAPI document renders a request part. */
export function jsonSchemaOf(schema: z.core.$ZodType): JsonSchema {
  return z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
}

/** Strings a client could well send: mostly short, sometimes exactly at the documented bound. */
function stringArb(s: JsonSchema): fc.Arbitrary<string> {
  const min = s.minLength ?? 0;
  const max = s.maxLength ?? 64;
  const short = Math.min(max, min + 24);
  return fc.oneof(
    { weight: 6, arbitrary: fc.string({ minLength: min, maxLength: short, unit: 'grapheme-ascii' }) },
    { weight: 2, arbitrary: fc.string({ minLength: min, maxLength: short, unit: 'grapheme' }) },
    { weight: 1, arbitrary: fc.constant('x'.repeat(Math.max(min, Math.min(max, 20_000)))) },
  );
}

function integerArb(s: JsonSchema): fc.Arbitrary<number> {
  const min = Math.max(
    s.exclusiveMinimum !== undefined ? s.exclusiveMinimum + 1 : (s.minimum ?? Number.MIN_SAFE_INTEGER),
    Number.MIN_SAFE_INTEGER,
  );
  const max = Math.min(s.maximum ?? Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER);
  const near = fc.integer({ min, max: Math.min(max, Math.max(min, 0) + 1000) });
  return fc.oneof({ weight: 4, arbitrary: near }, fc.constantFrom(min, max), fc.integer({ min, max }));
}

function numberArb(s: JsonSchema): fc.Arbitrary<number> {
  const excluded = s.exclusiveMinimum !== undefined;
  const min = s.exclusiveMinimum ?? s.minimum ?? -1e9;
  const max = s.maximum ?? 1e9;
  return fc.oneof(
    fc.double({ min, max, minExcluded: excluded, noNaN: true, noDefaultInfinity: true }),
    fc.integer({ min: Math.ceil(min) + (excluded ? 1 : 0), max: Math.floor(max) }),
  );
}

/** An arbitrary of values valid for `s`; `name` is the field's name, for hints. */
export function arbitraryFor(s: JsonSchema, hints: Hints = {}, name?: string): fc.Arbitrary<unknown> {
  if (name !== undefined && hints[name]) return hints[name];
  if (s.const !== undefined) return fc.constant(s.const);
  if (s.enum) return fc.constantFrom(...s.enum);
  const alternatives = s.anyOf ?? s.oneOf;
  if (alternatives) return fc.oneof(...alternatives.map((a) => arbitraryFor(a, hints, name)));
  if (Array.isArray(s.type)) return fc.oneof(...s.type.map((type) => arbitraryFor({ ...s, type }, hints)));
  switch (s.type) {
    case 'string':
      return stringArb(s);
    case 'integer':
      return integerArb(s);
    case 'number':
      return numberArb(s);
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array':
      return fc.array(arbitraryFor(s.items ?? {}, hints), { maxLength: Math.min(s.maxItems ?? 4, 4) });
    case 'object':
      return objectArb(s, hints);
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

function objectArb(s: JsonSchema, hints: Hints): fc.Arbitrary<unknown> {
  if (s.properties) {
    const model: Record<string, fc.Arbitrary<unknown>> = {};
    for (const [key, sub] of Object.entries(s.properties)) model[key] = arbitraryFor(sub, hints, key);
    return fc.record(model, { requiredKeys: s.required ?? [] });
  }
  // A record (`z.record`): keys after `propertyNames`, values after `additionalProperties`.
  const values = typeof s.additionalProperties === 'object' ? s.additionalProperties : {};
  const keys = stringArb({ minLength: 1, maxLength: 64, ...s.propertyNames });
  return fc.dictionary(keys, arbitraryFor(values, hints), { maxKeys: 6 });
}
