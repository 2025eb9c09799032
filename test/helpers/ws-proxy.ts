/**
 * A WebSocket-to-TCP proxy speaking Neon's wsproxy protocol (raw Postgres bytes in binary
 * frames), so the Neon serverless driver can reach the local PostgreSQL in tests. Only the
 * addresses in `allowed` can be reached.
 */
import net from 'node:net';
import { WebSocketServer } from 'ws';

export interface WsProxy {
  port: number;
  close(): Promise<void>;
}

export function startWsProxy(allowed: string[], port = 0): Promise<WsProxy> {
  const wss = new WebSocketServer({ host: '127.0.0.1', port, perMessageDeflate: false });
  wss.on('connection', (ws, req) => {
    const address = new URL(req.url ?? '/', 'http://proxy').searchParams.get('address') ?? '';
    if (!allowed.includes(address)) {
      ws.close(1008, `address ${address} not allowed`);
      return;
    }
    const [host, p] = address.split(':');
    const sock = net.connect({ host, port: Number(p) });
    sock.setNoDelay(true);
    ws.on('message', (data) => sock.write(data as Buffer));
    sock.on('data', (chunk) => ws.send(chunk));
    // Let the client close first: an immediate server-side close makes the driver report a
    // lost connection on a pool that is already shutting down.
    sock.on('close', () => setTimeout(() => ws.close(1000), 500).unref());
    sock.on('error', () => ws.terminate());
    ws.on('close', () => sock.end());
    ws.on('error', () => sock.destroy());
  });
  return new Promise((resolve, reject) => {
    wss.once('error', reject);
    wss.once('listening', () => {
      const address = wss.address();
      resolve({
        port: typeof address === 'object' && address ? address.port : port,
        close: () =>
          new Promise<void>((done) => {
            for (const client of wss.clients) client.terminate();
            wss.close(() => done());
          }),
      });
    });
  });
}
