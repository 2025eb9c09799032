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
 *
 * `roundTrips()` counts them without a clock: each websocket upgrade, and each flight of client
 * messages sent after the server last answered (what a client sends before hearing back rides
 * one round trip: a pipelined start-up and first statement count once). A lone Terminate is
 * not waited on and is not counted.
 */
import net from 'node:net';
import { WebSocketServer } from 'ws';

export interface WsProxy {
  port: number;
  /** One-way delay added to every message, in ms (0: none). */
  delayMs: number;
  /** Round trips so far, over every connection (see the module doc). */
  roundTrips(): number;
  close(): Promise<void>;
}

/** A Terminate message ('X', length 4): the client is leaving, not asking. */
const TERMINATE = Buffer.from([0x58, 0, 0, 0, 4]);

export function startWsProxy(allowed: string[], port = 0, delayMs = 0): Promise<WsProxy> {
  const settings = { delayMs };
  let roundTrips = 0;
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
    roundTrips++;
    const sock = net.connect({ host, port: Number(p) });
    sock.setNoDelay(true);
    let answered = true;
    ws.on('message', (data) => {
      const bytes = data as Buffer;
      if (answered && !bytes.equals(TERMINATE)) {
        roundTrips++;
        answered = false;
      }
      later(() => sock.write(bytes));
    });
    sock.on('data', (chunk) => {
      answered = true;
      later(() => ws.send(chunk));
    });
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
        roundTrips: () => roundTrips,
        close: () =>
          new Promise<void>((done) => {
            for (const client of wss.clients) client.terminate();
            wss.close(() => done());
          }),
      });
    });
  });
}
