#!/usr/bin/env node
/**
 * The floor under svc's figures: a bare proxy built from svc's own HTTP parts (fastify + an undici Pool, no auth, no
 * ledger, no cache, no validation, no SSE parsing: a stream's upstream body is piped to the client as it comes)
 * between the same load generator and mock upstream as `npm run bench`, pinned the same way (proxy on CPU 0, load
 * generator + mock on CPU 1). What it reaches on this machine bounds what any gateway written on these parts can
 * reach; svc's throughput, added latency and added time to first byte are read against it (docs/performance-notes.md).
 * Run: node test/bench/floor.mjs   (after `npm install`; no build needed)
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { CLIENT_HEADERS, HAS_TASKSET, PINNED, chatBody, cannon, cpuMs, round, runPinnedToLoadCpu, startMock, streamProbe, summarize } from './lib.mjs';

const self = fileURLToPath(import.meta.url);

if (process.argv[2] === '--proxy') {
  // The proxy itself, started by the measuring process below.
  const { default: Fastify } = await import('fastify');
  const { Pool } = await import('undici');
  const upstream = new URL(process.argv[3]);
  const pool = new Pool(upstream.origin, { connections: 64 });
  const app = Fastify({ logger: false });
  app.post('/v1/chat/completions', async (request, reply) => {
    const stream = request.body?.stream === true;
    const { statusCode, headers, body } = await pool.request({
      method: 'POST',
      path: '/v1/chat/completions',
      headers: { 'content-type': 'application/json', authorization: 'Bearer bench', accept: stream ? 'text/event-stream' : 'application/json' },
      body: JSON.stringify(request.body),
    });
    if (stream) return reply.code(statusCode).header('content-type', headers['content-type']).send(body);
    return reply.code(statusCode).send(await body.json());
  });
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  process.stdout.write(`${address}\n`);
} else {
  runPinnedToLoadCpu(import.meta.url, 'floor', measure);
}

/** The load generator's side: the mock, the proxy on CPU 0, then the streams measured direct and through it. */
async function measure() {
  const mock = await startMock();
  const argv = [process.execPath, self, '--proxy', mock.url];
  const proxy = spawn(PINNED && HAS_TASKSET ? 'taskset' : argv[0], PINNED && HAS_TASKSET ? ['-c', '0', ...argv] : argv.slice(1), { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise((resolve) => proxy.stdout.once('data', (chunk) => resolve(String(chunk).trim())));
  const next = () => ({ body: chatBody() });
  await cannon(url, { connections: 8, duration: 5, next });
  const cell = (value, width) => String(value).padStart(width);
  console.log(`bare fastify + undici proxy (${PINNED ? 'proxy on CPU 0, load generator + mock on CPU 1' : 'unpinned'}); headers ${Object.keys(CLIENT_HEADERS).join(', ')}`);
  console.log('buffered (latency in ms)');
  console.log('  conc  direct rps  proxy rps  proxy/direct  direct p50  proxy p50  added p50  added p99  proxy CPU ms/req');
  for (const connections of [1, 16, 64]) {
    const direct = await cannon(mock.url, { connections, duration: 3, next });
    const before = cpuMs(proxy.pid);
    const through = await cannon(url, { connections, duration: 3, next });
    const cpu = (cpuMs(proxy.pid) - before) / through.ok;
    const a = summarize(direct.latencies);
    const b = summarize(through.latencies);
    console.log(
      `  ${cell(connections, 4)}  ${cell(Math.round(direct.rps), 10)}  ${cell(Math.round(through.rps), 9)}  ${cell(round(through.rps / direct.rps, 3), 12)}` +
        `  ${cell(round(a.p50, 3), 10)}  ${cell(round(b.p50, 3), 9)}  ${cell(round(b.p50 - a.p50, 3), 9)}  ${cell(round(b.p99 - a.p99, 3), 9)}  ${cell(round(cpu, 3), 16)}`,
    );
  }
  console.log('streaming (stream: true; TTFB = first body chunk, ms)');
  console.log('  conc  direct TTFB p50  proxy TTFB p50  added TTFB p50  added TTFB p99');
  for (const concurrency of [1, 16]) {
    const requests = concurrency === 1 ? 2_000 : 6_000;
    await streamProbe(mock.url, { concurrency, requests: requests / 10 });
    await streamProbe(url, { concurrency, requests: requests / 10 });
    const direct = await streamProbe(mock.url, { concurrency, requests });
    const through = await streamProbe(url, { concurrency, requests });
    const a = summarize(direct.ttfb);
    const b = summarize(through.ttfb);
    console.log(`  ${cell(concurrency, 4)}  ${cell(round(a.p50, 3), 15)}  ${cell(round(b.p50, 3), 14)}  ${cell(round(b.p50 - a.p50, 3), 14)}  ${cell(round(b.p99 - a.p99, 3), 14)}`);
  }
  proxy.kill();
  await mock.close?.();
  process.exit(0);
}
