/**
 * A connection LISTENing on the work channel, recording every payload it hears, for tests of
 * when (and for whom) an enqueue wakes long polls. The caller ends `client`.
 */
import pg from 'pg';
import { WORK_CHANNEL } from '../../src/queue/enqueue.js';

export async function listenToWork(url: string): Promise<{ client: pg.Client; received: string[] }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const received: string[] = [];
  client.on('notification', (n) => received.push(n.payload ?? ''));
  await client.query(`LISTEN ${WORK_CHANNEL}`);
  return { client, received };
}
