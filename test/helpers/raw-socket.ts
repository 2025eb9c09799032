/**
 * A bare loopback connection to a server, for tests that write a request by hand (a head
 * with no body after it, a body sent a byte at a time) and watch how the server ends the
 * connection: what it answered, when it half-closed (`end`) and when the socket closed.
 */
import net from 'node:net';

export interface RawSocket {
  socket: net.Socket;
  /** Everything the server has sent so far, as text. */
  answer(): string;
  /** When the server half-closed its side (performance.now()). */
  ended: Promise<number>;
  /** When the socket closed (performance.now()). */
  closed: Promise<number>;
}

/** `allowHalfOpen`: the client does not close when the server does, as a stuck one would not. */
export async function openRawSocket(
  port: number,
  options: { allowHalfOpen?: boolean } = {},
): Promise<RawSocket> {
  const socket = net.connect({ port, host: '127.0.0.1', allowHalfOpen: options.allowHalfOpen ?? false });
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  let answer = '';
  socket.on('data', (c: Buffer) => {
    answer += c.toString('utf8');
  });
  socket.on('error', () => {});
  const ended = new Promise<number>((resolve) => socket.once('end', () => resolve(performance.now())));
  const closed = new Promise<number>((resolve) => socket.once('close', () => resolve(performance.now())));
  return { socket, answer: () => answer, ended, closed };
}
