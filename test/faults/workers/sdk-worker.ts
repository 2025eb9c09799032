/**
 * A customer's worker, as a real process, for the crashed-worker fault tests: it takes one
 * item through the official SDK (poll → ack → first heartbeat with a short ttl) and then
 * "works" on it forever, heartbeating every ttl/3 as a healthy worker does. It never
 * finishes: the test ends it with SIGKILL (a crash) or freezes it with SIGSTOP (a pause).
 *
 * Every step is one JSON line on stdout, so the test can act at a known point:
 * `{"event":"beat","id","last_heartbeat"}` after each accepted heartbeat, and once a call is
 * refused (a resumed worker whose item was handed on) `{"event":"refused","call","status"}`
 * for that heartbeat and for the force stop it then tries, before it exits.
 *
 * Settings (environment): LEASEHOLD_URL, LEASEHOLD_ENVIRONMENT_ID, LEASEHOLD_ENVIRONMENT_KEY,
 * LEASEHOLD_TTL_SECONDS (the heartbeat's desired_ttl_seconds).
 */
import Anthropic, { APIError } from '@anthropic-ai/sdk';

const baseURL = required('LEASEHOLD_URL');
const environmentId = required('LEASEHOLD_ENVIRONMENT_ID');
const ttlSeconds = Number(required('LEASEHOLD_TTL_SECONDS'));
const work = new Anthropic({ apiKey: required('LEASEHOLD_ENVIRONMENT_KEY'), baseURL }).beta.environments.work;

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`sdk-worker: ${name} is not set`);
  return value;
}

function report(line: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

const statusOf = (err: unknown) => (err instanceof APIError ? (err.status ?? null) : String(err));

async function main(): Promise<void> {
  let item = await work.poll(environmentId, { block_ms: 999 });
  while (!item) item = await work.poll(environmentId, { block_ms: 999 });
  const params = { environment_id: item.environment_id };
  await work.ack(item.id, params);
  let last = 'NO_HEARTBEAT';
  for (;;) {
    try {
      const beat = await work.heartbeat(item.id, {
        ...params,
        expected_last_heartbeat: last,
        desired_ttl_seconds: ttlSeconds,
      });
      last = beat.last_heartbeat;
      report({ event: 'beat', id: item.id, last_heartbeat: last, state: beat.state });
    } catch (err) {
      report({ event: 'refused', call: 'heartbeat', id: item.id, status: statusOf(err) });
      try {
        await work.stop(item.id, { ...params, force: true });
        report({ event: 'stopped', id: item.id });
      } catch (stopErr) {
        report({ event: 'refused', call: 'stop', id: item.id, status: statusOf(stopErr) });
      }
      return;
    }
    // A healthy worker renews well inside its lease (the SDK's own worker beats at ttl/2).
    await new Promise((r) => setTimeout(r, (ttlSeconds * 1000) / 3));
  }
}

main().catch((err: unknown) => {
  report({ event: 'error', message: String(err) });
  process.exit(1);
});
