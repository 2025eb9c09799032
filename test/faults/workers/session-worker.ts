/**
 * A BYOC worker as a real process, for the session-loop fault tests: the SDK's unmodified
 * `EnvironmentWorker` with its default toolset, in `LEASEHOLD_WORKDIR`, idling out after
 * LEASEHOLD_MAX_IDLE_MS. The test kills it with SIGKILL mid-tool, or lets it finish.
 *
 * Settings (environment): LEASEHOLD_URL, LEASEHOLD_ENVIRONMENT_ID, LEASEHOLD_ENVIRONMENT_KEY,
 * LEASEHOLD_WORKDIR, LEASEHOLD_MAX_IDLE_MS.
 */
import Anthropic from '@anthropic-ai/sdk';

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`session-worker: ${name} is not set`);
  return value;
}

const key = required('LEASEHOLD_ENVIRONMENT_KEY');
const client = new Anthropic({ apiKey: key, baseURL: required('LEASEHOLD_URL') });
const worker = client.beta.environments.work.worker({
  environmentId: required('LEASEHOLD_ENVIRONMENT_ID'),
  environmentKey: key,
  workdir: required('LEASEHOLD_WORKDIR'),
  workerId: `session-worker-${process.pid}`,
  memorySyncIntervalMs: null,
  maxIdleMs: Number(required('LEASEHOLD_MAX_IDLE_MS')),
});
const ac = new AbortController();
process.on('SIGTERM', () => ac.abort());
worker.run(ac.signal).then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(`session-worker: ${String(err)}`);
    process.exit(1);
  },
);
