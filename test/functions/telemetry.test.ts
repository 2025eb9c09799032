import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { trace } from '@opentelemetry/api';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { signalUrl, startTelemetry } from '../../functions/telemetry.js';
import { enqueue } from '../../src/queue/index.js';
import { withSpan } from '../../src/telemetry/tracing.js';
import { useTestDb } from '../helpers/db.js';
import { setupSession } from '../helpers/factories.js';

/** A stand-in OTLP/HTTP collector: records each POST's path and JSON body, answers 200. */
function collector() {
  const received: Array<{ path: string; body: string }> = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => {
      body += chunk;
    });
    req.on('end', () => {
      received.push({ path: req.url ?? '', body });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  return { server, received };
}

describe('startTelemetry', () => {
  const t = useTestDb('pg');
  const otlp = collector();
  let endpoint = '';
  const warnings: string[] = [];
  const log = { info: () => {}, warn: (m: string) => void warnings.push(m), error: () => {} };

  beforeAll(async () => {
    await new Promise<void>((resolve) => otlp.server.listen(0, '127.0.0.1', resolve));
    endpoint = `http://127.0.0.1:${(otlp.server.address() as AddressInfo).port}/otlp/`;
  });
  afterAll(async () => {
    await new Promise((resolve) => otlp.server.close(resolve));
  });
  beforeEach(() => {
    otlp.received.length = 0;
    warnings.length = 0;
  });

  it('with an endpoint, spans and the queue gauges reach the collector by the end of shutdown', async () => {
    const { environmentId, sessionId } = await setupSession(t.db);
    await enqueue(t.db, { environmentId, sessionId, kind: 'tool_exec' });
    const telemetry = startTelemetry({ otlpEndpoint: endpoint }, t.db, log);
    await withSpan('test.work', {}, async () => {});
    await telemetry.shutdown();

    const sent = (path: string) => otlp.received.filter((r) => r.path === path).map((r) => r.body);
    expect(sent('/otlp/v1/traces').join()).toContain('"test.work"');
    const metrics = sent('/otlp/v1/metrics').join();
    expect(metrics).toContain('"queue.depth"');
    expect(metrics).toContain(environmentId);
    expect(warnings).toEqual([]);
    // Shutdown hands the API back to its no-ops.
    expect(trace.getTracer('after').startSpan('x').isRecording()).toBe(false);
  });

  it('without an endpoint nothing is installed and nothing is sent', async () => {
    const telemetry = startTelemetry({ otlpEndpoint: null }, t.db, log);
    expect(trace.getTracer('off').startSpan('x').isRecording()).toBe(false);
    await telemetry.shutdown();
    expect(otlp.received).toEqual([]);
  });

  it('signal URLs append /v1/<signal> to the base endpoint, as OTLP/HTTP specifies', () => {
    expect(signalUrl('http://collector:4318', 'traces')).toBe('http://collector:4318/v1/traces');
    expect(signalUrl('https://o.example/base/', 'metrics')).toBe('https://o.example/base/v1/metrics');
  });
});
