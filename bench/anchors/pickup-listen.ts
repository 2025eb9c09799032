/**
 * The floor under every LISTEN/NOTIFY-driven pickup: one client LISTENs, another runs NOTIFY,
 * and a sample is the time from just before the NOTIFY is sent to the listener's
 * `notification` event. Nothing else happens between the two.
 */
import pg from 'pg';

const CHANNEL = 'bench_pickup_probe';

export interface NotifyProbe {
  /** One round trip: NOTIFY on the sender, milliseconds until the listener hears it. */
  sample(): Promise<number>;
  close(): Promise<void>;
}

export async function openNotifyProbe(databaseUrl: string): Promise<NotifyProbe> {
  const listener = new pg.Client({ connectionString: databaseUrl });
  const sender = new pg.Client({ connectionString: databaseUrl });
  await Promise.all([listener.connect(), sender.connect()]);
  await listener.query(`LISTEN ${CHANNEL}`);
  let expected = '';
  let heard: ((at: number) => void) | null = null;
  listener.on('notification', (n) => {
    const at = performance.now();
    if (n.payload === expected) heard?.(at);
  });
  let seq = 0;
  return {
    async sample() {
      expected = String(++seq);
      const arrived = new Promise<number>((resolve) => {
        heard = resolve;
      });
      const started = performance.now();
      const sent = sender.query(`NOTIFY ${CHANNEL}, '${expected}'`);
      const at = await arrived;
      await sent;
      heard = null;
      return at - started;
    },
    async close() {
      await Promise.all([listener.end(), sender.end()]);
    },
  };
}
