/**
 * How the API Worker starts the brain Worker (functions/brain-worker.ts): a `POST /turns`
 * through the service binding `BRAIN`, sent once per request that may have enqueued a turn and
 * kept alive with `waitUntil` after the response is sent. Shared by both Workers; it imports
 * nothing, so the API Worker's bundle carries none of the brain.
 */

/** The brain Worker's one route. */
export const BRAIN_TRIGGER_PATH = '/turns';
/** The URL the trigger asks for; only its path matters through a service binding. */
export const BRAIN_TRIGGER_URL = `https://leasehold-brain${BRAIN_TRIGGER_PATH}`;

/** A service binding as the runtime hands it over: something with a `fetch`. */
interface ServiceBinding {
  fetch(input: string, init?: RequestInit): Promise<Response>;
}

/**
 * The API's `turnEnqueued` hook for one request: the first call triggers the brain, later
 * ones do nothing. Undefined without a binding: turns then wait for a brain elsewhere.
 */
export function brainTrigger(
  binding: unknown,
  waitUntil: (promise: Promise<unknown>) => void,
): (() => void) | undefined {
  if (!isServiceBinding(binding)) return undefined;
  let sent = false;
  return () => {
    if (sent) return;
    sent = true;
    waitUntil(
      binding
        .fetch(BRAIN_TRIGGER_URL, { method: 'POST' })
        .then(async (res) => {
          const body = await res.text();
          if (!res.ok)
            console.warn(`[leasehold] the brain Worker answered ${res.status}: ${body.slice(0, 500)}`);
        })
        .catch((err: unknown) =>
          console.warn(`[leasehold] could not trigger the brain Worker: ${(err as Error).message}`),
        ),
    );
  };
}

function isServiceBinding(value: unknown): value is ServiceBinding {
  return typeof value === 'object' && value !== null && typeof (value as ServiceBinding).fetch === 'function';
}
