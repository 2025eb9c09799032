/**
 * The replicas test's fleet: Node servers (`startServer`, each its own process) on one
 * database and one configured admin key, and the clients' only way to reach them. Every
 * request goes through `send` (to one named replica) or `fetchVia` (an SDK client's fetch
 * that sends each attempt to the next replica of the caller's own round-robin, as a load
 * balancer in front of the fleet would), and every attempt is recorded: which replica, which
 * call, when, and its status or how the connection failed.
 *
 * A connection failure is `refused` when nothing listened on the replica's port (the request
 * never reached a server, so it is safe to send elsewhere) and `reset` otherwise (the server
 * may have acted on it: its outcome is unknown to the client).
 */
import { randomBytes } from 'node:crypto';
import { type RunningServer, startServer } from '../../helpers/server.js';

export type Failure = 'refused' | 'reset' | 'aborted';

export interface Attempt {
  replica: number;
  /** poll, ack, heartbeat, stop, stats, claim, extend, complete, enqueue, other */
  call: string;
  startedAt: number;
  endedAt: number;
  status: number | null;
  failure: Failure | null;
}

/** Thrown by the fleet's fetch when a replica did not answer; the SDK wraps it in APIConnectionError. */
export class ReplicaUnreachable extends Error {
  constructor(
    readonly replica: number,
    readonly failure: Failure,
    options: { cause: unknown },
  ) {
    super(`replica ${replica}: connection ${failure}`, options);
  }
}

const LIFECYCLE = new Set(['ack', 'heartbeat', 'stop', 'claim', 'extend', 'complete']);

/** The call a request makes, from its method and path. */
function callOf(method: string, path: string): string {
  const segments = path.split('?')[0]!.split('/');
  const last = segments[segments.length - 1]!;
  if (last === 'poll' || last === 'stats' || LIFECYCLE.has(last)) return last;
  if (method === 'POST' && path === '/v1/platform/work') return 'enqueue';
  return 'other';
}

/** True when the connection was refused (walks the cause chain undici wraps it in). */
function refused(err: unknown): boolean {
  for (let e = err as { code?: string; cause?: unknown; errors?: unknown[] } | undefined; e; ) {
    if (e.code === 'ECONNREFUSED') return true;
    if (e.errors?.some(refused)) return true;
    e = e.cause as typeof e;
  }
  return false;
}

export class Fleet {
  readonly attempts: Attempt[] = [];
  /** When each work id's ack was first sent: the earliest its startup lease can have begun. */
  readonly firstAckAt = new Map<string, number>();
  /** The output of servers that were killed, kept for failure messages. */
  readonly deadOutput: string[] = [];

  private constructor(
    private readonly servers: RunningServer[],
    private readonly databaseUrl: string,
    readonly adminKey: string,
    private readonly env: Record<string, string>,
  ) {}

  /**
   * Starts `size` servers at once, as a deploy rolls replicas out: their migrations and their
   * configured admin key meet on the one database. Every replica gets the same admin key (a
   * different one would retire the others': the configured key is one per deployment).
   */
  static async start(size: number, databaseUrl: string, env: Record<string, string>): Promise<Fleet> {
    const adminKey = `lh_test_admin_${randomBytes(24).toString('hex')}`;
    const started = await Promise.allSettled(
      Array.from({ length: size }, () => startServer({ databaseUrl, adminKey, env })),
    );
    const up = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
    const failed = started.find((s) => s.status === 'rejected');
    if (failed) {
      await Promise.all(up.map((s) => s.stop()));
      throw (failed as PromiseRejectedResult).reason;
    }
    return new Fleet(up, databaseUrl, adminKey, env);
  }

  get size(): number {
    return this.servers.length;
  }

  url(replica: number): string {
    return this.servers[replica]!.baseURL;
  }

  output(replica: number): string {
    return this.servers[replica]!.output();
  }

  /** Sends one request to `replica` and records it; the body is read here, so a cut answer is a `reset`. */
  async send(replica: number, path: string, init: RequestInit = {}): Promise<Response> {
    const call = callOf(init.method ?? 'GET', path);
    const attempt: Attempt = {
      replica,
      call,
      startedAt: performance.now(),
      endedAt: 0,
      status: null,
      failure: null,
    };
    this.attempts.push(attempt);
    const workId = call === 'ack' ? path.split('?')[0]!.split('/').at(-2)! : '';
    if (call === 'ack' && !this.firstAckAt.has(workId)) this.firstAckAt.set(workId, attempt.startedAt);
    try {
      const res = await fetch(`${this.url(replica)}${path}`, init);
      const body = await res.arrayBuffer();
      attempt.status = res.status;
      return new Response(body.byteLength > 0 ? body : null, {
        status: res.status,
        statusText: res.statusText,
        headers: res.headers,
      });
    } catch (err) {
      attempt.failure = init.signal?.aborted ? 'aborted' : refused(err) ? 'refused' : 'reset';
      throw new ReplicaUnreachable(replica, attempt.failure, { cause: err });
    } finally {
      attempt.endedAt = performance.now();
    }
  }

  /** A round-robin over the replicas starting at `offset`: each call names the next one. */
  rotation(offset: number): () => number {
    let i = offset;
    return () => i++ % this.servers.length;
  }

  /** A fetch for an SDK client: each attempt goes to `next()`'s replica (the URL's origin replaced). */
  fetchVia(next: () => number): typeof fetch {
    return (input, init) => {
      const url = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
      return this.send(next(), `${url.pathname}${url.search}`, init);
    };
  }

  /** SIGKILLs the replica's whole process group (tsx and the server under it) and waits for the exit. */
  async kill(replica: number): Promise<number> {
    const server = this.servers[replica]!;
    process.kill(-server.pid, 'SIGKILL');
    const code = await server.exited;
    this.deadOutput.push(server.output());
    await server.stop();
    return code;
  }

  /** Starts the replica again on its own port (clients keep its address); resolves once it answers. */
  async restart(replica: number): Promise<void> {
    const port = this.servers[replica]!.port;
    this.servers[replica] = await startServer({
      databaseUrl: this.databaseUrl,
      adminKey: this.adminKey,
      env: this.env,
      port,
    });
  }

  async stop(): Promise<void> {
    await Promise.all(this.servers.map((s) => s.stop()));
  }
}
