/**
 * `build(t)`: buildApp over a fresh in-memory store, closed after the test (fastify/demo test/helper.ts).
 * Pass `env` to choose the auth mode etc.; it is parsed by the real config loader; `wrapStore` to give the services
 * a view of the store (one that records the statements they read, say).
 */
import { Writable } from 'node:stream';
import type { TestContext } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { loadConfig, type Config } from '../../src/config.ts';
import { buildApp } from '../../src/http/app.ts';
import { createServices, type ServiceOverrides, type Services } from '../../src/services.ts';
import { openStore, type Store } from '../../src/store/store.ts';

export interface Built {
  app: FastifyInstance;
  services: Services;
  config: Config;
}

export async function build(
  t: TestContext,
  options: { env?: Record<string, string>; overrides?: ServiceOverrides; dataDir?: string; wrapStore?: (store: Store) => Store; log?: LogSink } = {},
): Promise<Built> {
  const config = loadConfig({ SVC_LOG_LEVEL: options.log ? 'info' : 'silent', ...options.env }, { dataDir: options.dataDir ?? null });
  const store = openStore({ dataDir: config.dataDir });
  const services = await createServices(config, options.wrapStore ? options.wrapStore(store) : store, options.overrides);
  const app = await buildApp(services, options.log ? { logger: { level: 'info', stream: options.log.stream } as never } : {});
  t.after(async () => {
    await app.close();
    await store.close();
  });
  return { app, services, config };
}

/** Where `build`'s `log` option sends svc's log (level info, pino's JSON lines): `text()` is all written so far. */
export interface LogSink {
  stream: Writable;
  text(): string;
}

export function logSink(): LogSink {
  let written = '';
  return { stream: new Writable({ write: (chunk, _encoding, done) => ((written += chunk), done()) }), text: () => written };
}

/** JSON body of an inject response. */
export function json<T = any>(response: { body: string }): T {
  return JSON.parse(response.body) as T;
}

export function bearer(token: string): Record<string, string> {
  return { authorization: `Bearer ${token}` };
}

/** Record a gateway run through the chat wire, of a prompt never asked before (so never a cache hit): its id. */
export async function newChatRun(app: FastifyInstance, headers: Record<string, string> = {}): Promise<string> {
  const response = await app.inject({
    method: 'POST',
    url: '/v1/chat/completions',
    headers,
    payload: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: `hello ${process.hrtime.bigint()}` }] },
  });
  if (response.statusCode !== 200) throw new Error(`the chat request was answered ${response.statusCode}: ${response.body}`);
  return String(response.headers['x-svc-run-id']);
}
