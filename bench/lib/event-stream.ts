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
