/**
 * A TCP proxy in front of PostgreSQL that counts the statements its clients run: every
 * simple-protocol Query ('Q') and every extended-protocol Execute ('E') message. The
 * database's own statistics are flushed lazily and count transactions, not statements;
 * this counts exactly what a client sent, whenever it sent it.
 */
import net from 'node:net';

export interface CountProxy {
  /** `host:port` to give clients in place of the database's. */
  address: string;
  port: number;
  statements(): number;
  connections(): number;
  close(): Promise<void>;
}

const SSL_REQUEST = 80877103;
const GSSENC_REQUEST = 80877104;

export async function startCountProxy(target: { host: string; port: number }): Promise<CountProxy> {
  let statements = 0;
  let connections = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    connections++;
    const upstream = net.connect(target.port, target.host);
    // No Nagle on either leg: a proxy must not hold small protocol messages back.
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    sockets.add(client);
    sockets.add(upstream);
    let buffer = Buffer.alloc(0);
    let started = false;
    client.on('data', (chunk: Buffer) => {
      upstream.write(chunk);
      buffer = Buffer.concat([buffer, chunk]);
      for (;;) {
        if (!started) {
          if (buffer.length < 8) return;
          const length = buffer.readInt32BE(0);
          const code = buffer.readInt32BE(4);
          if (buffer.length < length) return;
          buffer = buffer.subarray(length);
          // An SSL or GSS request is answered first; the startup message follows it.
          if (code !== SSL_REQUEST && code !== GSSENC_REQUEST) started = true;
          continue;
        }
        if (buffer.length < 5) return;
        const length = buffer.readInt32BE(1);
        if (buffer.length < 1 + length) return;
        const type = String.fromCharCode(buffer[0]!);
        if (type === 'Q' || type === 'E') statements++;
        buffer = buffer.subarray(1 + length);
      }
    });
    upstream.on('data', (chunk) => client.write(chunk));
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('close', end);
    upstream.on('close', end);
    client.on('error', end);
    upstream.on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    address: `127.0.0.1:${port}`,
    port,
    statements: () => statements,
    connections: () => connections,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
