/**
 * Memory of an evidence packet of a run at its limits (docs/performance-notes.md): a chat run whose request is
 * BENCH_PACKET_REQUEST_MIB (default 16) MiB, 7,040 `side_effect.planned` appends of ~2.2 KiB (16 MiB of client
 * payload) and 200 feedback records of 32,000 characters, made through the API in-process; the packet is fetched by
 * `curl` from another process, three times, while the server's RSS and heap are sampled every 2 ms.
 * Run with: node --expose-gc --import tsx test/bench/evidence-packet.ts
 */
import { execFile } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import { bearer, build } from '../support/build.ts';

const BOOT = 'bootstrap-token-bench-packet-0001';
const admin = bearer(BOOT);
const REQUEST_MIB = Number(process.env.BENCH_PACKET_REQUEST_MIB ?? 16);
const MiB = 1024 * 1024;
const cleanups: Array<() => Promise<void>> = [];
const { app } = await build({ after: (fn: () => Promise<void>) => cleanups.push(fn) } as never, {
  env: { SVC_API_KEY: BOOT, SVC_RATE_LIMIT_API_PER_MINUTE: '10000000', SVC_RATE_LIMIT_GATEWAY_PER_MINUTE: '10000000' },
});
try {
  const chat = await app.inject({
    method: 'POST',
    url: '/v1/chat/completions',
    headers: admin,
    payload: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: `hello ${Date.now()} ${'lorem ipsum '.repeat((REQUEST_MIB * MiB) / 12)}` }] },
  });
  if (chat.statusCode !== 200) throw new Error(`chat: ${chat.statusCode} ${chat.body.slice(0, 300)}`);
  const runId = String(chat.headers['x-svc-run-id']);
  const post = async (url: string, payload: unknown) => {
    const response = await app.inject({ method: 'POST', url, headers: admin, payload: payload as never });
    if (response.statusCode >= 300) throw new Error(`${url}: ${response.statusCode} ${response.body.slice(0, 300)}`);
  };
  const args = JSON.stringify({ query: 'x'.repeat(1000), filters: Array.from({ length: 20 }, (_, i) => ({ field: `f${i}`, op: 'eq', value: `v${i}` })) });
  for (let i = 0; i < 7040; i++) await post('/api/v1/trace', { runId, type: 'side_effect.planned', payload: { toolName: `tool${i % 7}`, level: 2, payload: { i, args } } });
  for (let i = 0; i < 200; i++) await post(`/api/v1/runs/${runId}/feedback`, { type: 'rating', rating: 4, correction: `${i} ${'c'.repeat(31_990)}` });

  await app.listen({ port: 0, host: '127.0.0.1' });
  const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/api/v1/runs/${runId}/evidence-packet`;
  for (let round = 1; round <= 3; round++) {
    (globalThis as { gc?: () => void }).gc?.();
    const base = process.memoryUsage();
    const cpuBefore = process.cpuUsage();
    let rss = base.rss;
    let heap = base.heapUsed;
    const sampler = setInterval(() => {
      const now = process.memoryUsage();
      rss = Math.max(rss, now.rss);
      heap = Math.max(heap, now.heapUsed);
    }, 2);
    const { stdout } = await promisify(execFile)('curl', ['-s', '-o', '/dev/null', '-w', '%{http_code} %{size_download} %{time_starttransfer} %{time_total}', '-H', `authorization: Bearer ${BOOT}`, url]);
    clearInterval(sampler);
    const cpu = process.cpuUsage(cpuBefore);
    const [status, bytes, firstByte, total] = stdout.split(' ');
    const mib = (n: number) => (n / MiB).toFixed(0);
    console.log(
      `round ${round}: ${status} ${(Number(bytes) / MiB).toFixed(1)} MiB, first byte ${Number(firstByte).toFixed(2)} s, whole ${Number(total).toFixed(2)} s, server CPU ${((cpu.user + cpu.system) / 1000).toFixed(0)} ms; rss ${mib(base.rss)} -> peak ${mib(rss)} MiB (+${mib(rss - base.rss)}); heapUsed ${mib(base.heapUsed)} -> peak ${mib(heap)} MiB (+${mib(heap - base.heapUsed)})`,
    );
  }
} finally {
  for (const cleanup of cleanups) await cleanup();
}
