/**
 * A WebSocket-to-TCP proxy speaking Neon's wsproxy protocol (raw Postgres bytes in binary
 * frames), so the Neon serverless driver can reach the local PostgreSQL in tests. Only the
 * addresses in `allowed` can be reached.
 *
 * `delayMs` (changeable while it runs) holds every message that long in each direction and
 * the websocket upgrade for one round trip, standing in for the network between a Worker and
 * its database: a call's extra wall time over the round trip (2 × delayMs) is the number of
 * round trips it waited on. Change it only while no connection is open (messages in flight
 * under an older delay could be reordered).
 */
import net from 'node:net';
import { WebSocketServer } from 'ws';

export interface WsProxy {
  port: number;
  /** One-way delay added to every message, in ms (0: none). */
  delayMs: number;
  close(): Promise<void>;
}

export function startWsProxy(allowed: string[], port = 0, delayMs = 0): Promise<WsProxy> {
  const settings = { delayMs };
  const later = (fn: () => void) => {
    if (settings.delayMs > 0) setTimeout(fn, settings.delayMs);
    else fn();
  };
  const wss = new WebSocketServer({
    host: '127.0.0.1',
    port,
    perMessageDeflate: false,
    // The upgrade's request and response: one round trip before the first byte can pass.
    verifyClient: (_info, done) => {
      if (settings.delayMs > 0) setTimeout(() => done(true), 2 * settings.delayMs);
      else done(true);
    },
  });
  wss.on('connection', (ws, req) => {
    const address = new URL(req.url ?? '/', 'http://proxy').searchParams.get('address') ?? '';
    if (!allowed.includes(address)) {
      ws.close(1008, `address ${address} not allowed`);
      return;
    }
    const [host, p] = address.split(':');
    const sock = net.connect({ host, port: Number(p) });
    sock.setNoDelay(true);
    ws.on('message', (data) => later(() => sock.write(data as Buffer)));
    sock.on('data', (chunk) => later(() => ws.send(chunk)));
    // Let the client close first: an immediate server-side close makes the driver report a
    // lost connection on a pool that is already shutting down.
    sock.on('close', () => setTimeout(() => ws.close(1000), 500).unref());
    sock.on('error', () => ws.terminate());
    ws.on('close', () => later(() => sock.end()));
    ws.on('error', () => sock.destroy());
  });
  return new Promise((resolve, reject) => {
    wss.once('error', reject);
    wss.once('listening', () => {
      const address = wss.address();
      resolve({
        port: typeof address === 'object' && address ? address.port : port,
        get delayMs() {
          return settings.delayMs;
        },
        set delayMs(ms: number) {
          settings.delayMs = ms;
        },
        close: () =>
          new Promise<void>((done) => {
            for (const client of wss.clients) client.terminate();
            wss.close(() => done());
          }),
      });
    });
  });
}
