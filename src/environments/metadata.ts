/**
 * Environment metadata: string labels for routing and bookkeeping, not a document store, so
 * it is capped. A patch sets keys with a non-empty string and deletes them with null or ""
 * (the SDK's environment semantics; work metadata deletes with null only).
 */

/** At most this many pairs on one environment, counted after a patch is applied. */
export const MAX_METADATA_PAIRS = 16;
/** Key length in characters (keys must be non-empty). */
export const MAX_METADATA_KEY = 64;
/** Value length in characters. */
export const MAX_METADATA_VALUE = 512;

export type MetadataPatch = Record<string, string | null>;

/** `current` with `patch` applied: "" and null delete, other strings set, omitted keys stay. */
export function applyMetadataPatch(
  current: Record<string, string>,
  patch: MetadataPatch | undefined,
): Record<string, string> {
  const out = { ...current };
  for (const [key, value] of Object.entries(patch ?? {})) {
    if (value === null || value === '') delete out[key];
    else out[key] = value;
  }
  return out;
}

/** What is wrong with a patch's keys and values (not its resulting size), or null. */
export function metadataProblem(patch: MetadataPatch): string | null {
  const entries = Object.entries(patch);
  if (entries.length > MAX_METADATA_PAIRS) return `metadata may have at most ${MAX_METADATA_PAIRS} keys`;
  for (const [key, value] of entries) {
    if (key.length === 0) return 'metadata keys must not be empty';
    if (key.length > MAX_METADATA_KEY)
      return `metadata key "${key.slice(0, 16)}…" is longer than ${MAX_METADATA_KEY} characters`;
    if (value !== null && value.length > MAX_METADATA_VALUE)
      return `metadata value of "${key}" is longer than ${MAX_METADATA_VALUE} characters`;
  }
  return null;
}
