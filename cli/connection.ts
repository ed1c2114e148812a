/**
 * How an admin command reaches svc (DESIGN.md section 4), in order:
 * 1. `--url` / `SVC_BASE_URL`: plain HTTP with `--api-key` / `SVC_API_KEY` as the bearer token;
 * 2. the data directory is owned by a live `svc serve`: its local socket (the local operator);
 * 3. otherwise the data directory in-process: take the owner lock, build the same app, send requests through
 *    `app.inject` as the local operator, release everything at the end.
 */
import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import { loadConfig } from '../src/config.ts';
import { SvcClient } from '../src/client/client.ts';
import { httpTransport, injectTransport, socketTransport, type Transport } from '../src/client/transport.ts';
import { buildApp } from '../src/http/app.ts';
import { LOCAL_OPERATOR_HEADER, LOCAL_OPERATOR_SECRET } from '../src/http/local-socket.ts';
import { createServices } from '../src/services.ts';
import { acquireOwnerLock, DataDirLockedError, readLiveOwner } from '../src/store/owner-lock.ts';
import { openStore } from '../src/store/store.ts';

export interface ConnectionOptions {
  url?: string;
  apiKey?: string;
  dataDir?: string;
  json?: boolean;
}

/** The options every admin command takes. */
export function withConnectionOptions(command: Command): Command {
  return command
    .option('--url <url>', 'talk to a running svc over HTTP (env SVC_BASE_URL)')
    .option('--api-key <token>', 'bearer token for --url (env SVC_API_KEY)')
    .option('-d, --data-dir <dir>', 'data directory (env SVC_DATA_DIR, default ~/.svc)')
    .option('--json', 'print JSON instead of a table');
}

export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

async function inProcessTransport(dataDir: string): Promise<Transport> {
  const config = loadConfig({ ...process.env, SVC_LOG_LEVEL: 'silent' }, { dataDir });
  const lock = acquireOwnerLock(dataDir, null);
  try {
    const store = openStore({ dataDir });
    const services = await createServices(config, store);
    const app = await buildApp(services);
    return injectTransport(app, { [LOCAL_OPERATOR_HEADER]: LOCAL_OPERATOR_SECRET }, async () => {
      await app.close();
      await store.close();
      lock.release();
    });
  } catch (error) {
    lock.release();
    throw error;
  }
}

export async function connect(options: ConnectionOptions): Promise<SvcClient> {
  const url = options.url ?? process.env.SVC_BASE_URL;
  if (url) return new SvcClient(httpTransport(url, options.apiKey ?? process.env.SVC_API_KEY ?? null));
  const overrides = options.dataDir !== undefined ? { dataDir: options.dataDir } : {};
  const dataDir = loadConfig(process.env, overrides).dataDir!;
  const owner = existsSync(dataDir) ? readLiveOwner(dataDir) : null;
  if (owner) {
    if (!owner.socketPath) throw new DataDirLockedError(owner);
    return new SvcClient(socketTransport(owner.socketPath));
  }
  return new SvcClient(await inProcessTransport(dataDir));
}

/** Run `fn` with a connected client and always close it. */
export async function withClient<T>(options: ConnectionOptions, fn: (client: SvcClient) => Promise<T>): Promise<T> {
  const client = await connect(options);
  try {
    return await fn(client);
  } finally {
    await client.close();
  }
}
