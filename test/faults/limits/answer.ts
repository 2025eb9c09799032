import type { Answer } from '../../helpers/raw-post.js';

/** A response read whole, for the limit tests' assertions on status, headers and envelope. */
export type { Answer };

export async function answer(res: Response): Promise<Answer> {
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : null };
}
