/**
 * A private nats-server per test file (see `nats-server.ts`), started before the file's tests
 * and stopped after them.
 */
import { afterAll, beforeAll } from 'vitest';
import { type NatsServer, startNatsServer } from './nats-server.js';

export { freezeServer, type NatsServer, natsServerBinary, startNatsServer } from './nats-server.js';

/** One server for the file: started before its tests, stopped after. */
export function useNatsServer(extraConfig = ''): NatsServer {
  const handle = {} as NatsServer;
  beforeAll(async () => {
    // Descriptors, not values: `pid` is a getter that follows a restart in place.
    Object.defineProperties(handle, Object.getOwnPropertyDescriptors(await startNatsServer(extraConfig)));
  }, 20_000);
  afterAll(async () => {
    await handle.stop?.();
  });
  return handle;
}
