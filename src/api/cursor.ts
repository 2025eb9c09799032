/**
 * Keyset cursors for newest-first lists: base64url of `<tag>|<created_at>|<id>` of the last
 * row returned. The tag names the list, so a cursor from one list is refused by another.
 */
import { fromBase64UrlText, toBase64Url } from '../base64.js';
import { type IdPrefix, isMintedId } from '../ids.js';
import { isRfc3339 } from '../rfc3339.js';

export interface KeysetPosition {
  createdAt: string;
  id: string;
}

export function encodeKeysetCursor(tag: string, position: KeysetPosition): string {
  return toBase64Url(`${tag}|${position.createdAt}|${position.id}`);
}

/** The position, or null when `page` is not a cursor this server made for this list. */
export function decodeKeysetCursor(tag: string, idPrefix: IdPrefix, page: string): KeysetPosition | null {
  if (!/^[A-Za-z0-9_-]{1,200}$/.test(page)) return null;
  let text: string;
  try {
    text = fromBase64UrlText(page);
  } catch {
    return null;
  }
  const [version, createdAt, id, ...rest] = text.split('|');
  if (version !== tag || rest.length > 0 || !createdAt || !id) return null;
  if (!isRfc3339(createdAt) || !isMintedId(id, idPrefix)) return null;
  return { createdAt, id };
}
