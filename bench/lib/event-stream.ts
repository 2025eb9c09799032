import { type Metrics, percentile } from './harness.js';

/**
 * Whether a statement is an event stream's: a read of its session's head (what an idle stream
 * re-reads) or of the session's events. The queue's statements (the brain's claims, the
 * pollers') name neither, so one counting window can tell streams from the rest.
 */
export function isEventStreamStatement(sql: string): boolean {
  return /\blast_seq FROM sessions\b|\bsession_events\b/.test(sql);
}

/**
 * A session's event stream as a benchmark reads it: `until(type)` resolves with the
 * performance.now() at which the first frame of that type (after the call) arrived.
 */
export interface OpenStream {
  until(type: string): Promise<number>;
  close(): void;
}

export async function openEventStream(url: string, headers: Record<string, string>): Promise<OpenStream> {
  const ac = new AbortController();
  const res = await fetch(url, { headers, signal: ac.signal });
  if (!res.ok) throw new Error(`event stream ${url}: ${res.status} ${await res.text()}`);
  const waiting: Array<{ type: string; resolve: (at: number) => void }> = [];
  void (async () => {
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        const at = performance.now();
        buffer += decoder.decode(chunk, { stream: true });
        let end = buffer.indexOf('\n\n');
        while (end >= 0) {
          const type = /^event: (.+)$/m.exec(buffer.slice(0, end))?.[1];
          buffer = buffer.slice(end + 2);
          for (const w of waiting.filter((x) => x.type === type)) {
            waiting.splice(waiting.indexOf(w), 1);
            w.resolve(at);
          }
          end = buffer.indexOf('\n\n');
        }
      }
    } catch {
      // aborted
    }
  })();
  return {
    until: (type) => new Promise<number>((resolve) => waiting.push({ type, resolve })),
    close: () => ac.abort(),
  };
}

/**
 * The session benchmarks' round: `warmup` samples thrown away, then `samples` kept, each the
 * time from a user message to the model's request and to its frame on the stream.
 */
export async function sampleLoop(
  sizes: { samples: number; warmup: number },
  sample: () => Promise<{ model: number; frame: number }>,
): Promise<Metrics> {
  const model: number[] = [];
  const frame: number[] = [];
  for (let i = 0; i < sizes.warmup + sizes.samples; i++) {
    const s = await sample();
    if (i < sizes.warmup) continue;
    model.push(s.model);
    frame.push(s.frame);
  }
  return {
    model_call_p50_ms: percentile(model, 50),
    model_call_p99_ms: percentile(model, 99),
    sse_frame_p50_ms: percentile(frame, 50),
    sse_frame_p99_ms: percentile(frame, 99),
  };
}
