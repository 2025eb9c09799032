/**
 * HTTP claimers on the platform lane, as a platform function drives it: `concurrency` loops,
 * each on its own keep-alive connection, claiming an item, doing nothing, and settling it —
 * in loop mode with `complete_and_claim` (one request per item, the settlement also leases the
 * next), otherwise with `claim` then `complete` (two requests per item).
 */
import { HttpClient } from './http-client.js';

const KIND = 'model_turn';
const TTL_SECONDS = 60;

interface WireItem {
  id: string;
  lease: string;
}

export interface PlatformDrainOptions {
  baseURL: string;
  /** A platform API key (Bearer). */
  key: string;
  concurrency: number;
  /** Items to settle; the backlog must hold more (it runs dry: the run fails). */
  count: number;
  loop: boolean;
}

/** Items/s from the first request to the last settlement; any unexpected answer fails the run. */
export async function drainPlatformHttp(options: PlatformDrainOptions): Promise<number> {
  const client = new HttpClient(options.baseURL, options.concurrency);
  const headers = { authorization: `Bearer ${options.key}`, 'content-type': 'application/json' };
  const post = async (path: string, body: unknown, want: number) => {
    const answer = await client.request('POST', `/v1/platform/work${path}`, headers, JSON.stringify(body));
    if (answer.status !== want) {
      throw new Error(`POST ${path}: expected ${want}, got ${answer.status} ${answer.text.slice(0, 300)}`);
    }
    return answer.text;
  };
  const claim = async () => {
    const item = JSON.parse(
      await post('/claim', { kind: KIND, ttl_seconds: TTL_SECONDS }, 200),
    ) as WireItem | null;
    if (!item) throw new Error(`the backlog ran dry after ${done} items`);
    return item;
  };
  const complete = (item: WireItem) => post(`/${item.id}/complete`, { lease: item.lease }, 204);
  let taken = 0;
  let done = 0;

  const loop = async () => {
    if (!options.loop) {
      while (taken < options.count) {
        taken++;
        await complete(await claim());
        done++;
      }
      return;
    }
    if (taken++ >= options.count) return;
    let item = await claim();
    for (;;) {
      if (taken >= options.count) {
        // The last one: settle it and take nothing more, so no lease is left behind.
        await complete(item);
        done++;
        return;
      }
      taken++;
      const body = { lease: item.lease, kind: KIND, ttl_seconds: TTL_SECONDS };
      const next = JSON.parse(await post(`/${item.id}/complete_and_claim`, body, 200)) as WireItem | null;
      done++;
      if (!next) throw new Error(`the backlog ran dry after ${done} items`);
      item = next;
    }
  };

  const started = performance.now();
  try {
    await Promise.all(Array.from({ length: options.concurrency }, loop));
  } finally {
    client.close();
  }
  return done / ((performance.now() - started) / 1000);
}
