/**
 * Lingering close for the Node server: an answer sent before its request's body has arrived
 * whole (a 413 on a declared length, a 401 before the body is read) reaches the client.
 *
 * Node answers such a request with `Connection: close` and destroys the socket as soon as the
 * answer is flushed. The bytes the client is still sending then arrive at a closed socket; the
 * kernel answers them with a reset, and a client still writing its body fails with EPIPE or
 * ECONNRESET before it reads the answer waiting in its buffer (the SDK then retries the same
 * oversized body and reports a connection error instead of the 413). Here the server half-closes
 * instead — the answer and a FIN — and goes on reading and discarding until the client closes,
 * for at most `LINGER_MS` (then the socket is destroyed, as before). Only a socket whose last
 * request was incomplete lingers; every other close is Node's own.
 */
import type { IncomingMessage, Server } from 'node:http';
import type { Socket } from 'node:net';

/** How long a socket may linger, reading and discarding, after its last answer. */
export const LINGER_MS = 2_000;

const lastRequest = Symbol('leasehold.lastRequest');
type Tracked = Socket & { [lastRequest]?: IncomingMessage };

export function lingerOnClose(server: Server): void {
  server.on('request', (req: IncomingMessage) => {
    (req.socket as Tracked)[lastRequest] = req;
  });
  server.on('connection', (socket: Tracked) => {
    const destroySoon = socket.destroySoon.bind(socket);
    socket.destroySoon = () => {
      const req = socket[lastRequest];
      if (!req || req.complete || socket.destroyed || socket.readableEnded) return destroySoon();
      socket.end();
      const timer = setTimeout(() => socket.destroy(), LINGER_MS);
      timer.unref();
      socket.once('close', () => clearTimeout(timer));
      // The client's FIN: it has read the answer (or given up); nothing more will come.
      socket.once('end', () => socket.destroy());
      // Whatever is still in flight is read and dropped, not left to turn into a reset.
      socket.resume();
    };
  });
}
