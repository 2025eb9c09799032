/**
 * A TCP proxy in front of PostgreSQL that counts the statements its clients run: every
 * simple-protocol Query ('Q') and every extended-protocol Execute ('E') message. The
 * database's own statistics are flushed lazily and count transactions, not statements;
 * this counts exactly what a client sent, whenever it sent it.
 *
 * Each statement is also counted under its SQL text (a Parse names it, a Bind ties a portal to
 * it, an Execute runs the portal), so one window can tell apart the statements of clients that
 * share a database: `statementsWhere(sql => …)`.
 */
import net from 'node:net';

export interface CountProxy {
  /** `host:port` to give clients in place of the database's. */
  address: string;
  port: number;
  statements(): number;
  /** Statements run so far whose SQL text passes `test`. */
  statementsWhere(test: (sql: string) => boolean): number;
  connections(): number;
  close(): Promise<void>;
}

const SSL_REQUEST = 80877103;
const GSSENC_REQUEST = 80877104;

export async function startCountProxy(target: { host: string; port: number }): Promise<CountProxy> {
  let statements = 0;
  let connections = 0;
  const bySql = new Map<string, number>();
  const counted = (sql: string) => {
    statements++;
    bySql.set(sql, (bySql.get(sql) ?? 0) + 1);
  };
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
    // This connection's prepared statements and portals, by name ('' is the unnamed one).
    const prepared = new Map<string, string>();
    const portals = new Map<string, string>();
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
        const body = buffer.subarray(5, 1 + length);
        if (type === 'Q') counted(cstrings(body, 1)[0]!);
        else if (type === 'P') {
          const [name, sql] = cstrings(body, 2);
          prepared.set(name!, sql!);
        } else if (type === 'B') {
          const [portal, name] = cstrings(body, 2);
          portals.set(portal!, prepared.get(name!) ?? '');
        } else if (type === 'E') counted(portals.get(cstrings(body, 1)[0]!) ?? '');
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
    statementsWhere: (test) => {
      let n = 0;
      for (const [sql, count] of bySql) if (test(sql)) n += count;
      return n;
    },
    connections: () => connections,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The first `n` NUL-terminated strings of a message body. */
function cstrings(body: Buffer, n: number): string[] {
  const out: string[] = [];
  let at = 0;
  for (let i = 0; i < n; i++) {
    const end = body.indexOf(0, at);
    if (end < 0) break;
    out.push(body.toString('utf8', at, end));
    at = end + 1;
  }
  return out;
}
