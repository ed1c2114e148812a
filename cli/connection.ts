/**
 * How an admin command reaches svc (DESIGN.md section 4), in order:
 * 1. `--url` / `SVC_BASE_URL`: plain HTTP with `--api-key` / `SVC_API_KEY` as the bearer token;
 * 2. the data directory is owned by a live `svc serve`: its local socket (the local operator);
 * 3. otherwise the data directory in-process: take the owner lock, build the same app, send requests through
 *    `app.inject` as the local operator, release everything at the end.
 * A data directory held by another short-lived command (a lock without a socket) is waited for, briefly.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Command } from 'commander';
import { loadConfig, loadOwnerWaitMs } from '../src/config.ts';
import type { SvcClient } from '../src/client/client.ts';
import type { Transport } from '../src/client/transport.ts';
import { ensurePrivateDataDir, warnOfExposedParents } from '../src/store/data-dir.ts';
import { isHelpCommand } from './help.ts';
import { currentRun } from './run-context.ts';
import { parseBaseUrl, parseDataDir, parseNonEmpty, shownUrl } from './options.ts';
import { DataDirLockedError, OWNER_LOCK_FILE, readLiveOwner, type OwnerRecord } from '../src/store/owner-lock.ts';

export interface ConnectionOptions {
  url?: string;
  apiKey?: string;
  dataDir?: string;
  json?: boolean;
}

const OWNER_POLL_MS = 100;

/**
 * The client and its transports, loaded once a command connects: undici, and the Node built-ins it requires as it
 * loads (http, assert, ...), stay out of `svc --version`, `--help` and usage errors.
 */
const loadClient = async () => {
  const [{ SvcClient }, { httpTransport, socketTransport }] = await Promise.all([import('../src/client/client.ts'), import('../src/client/transport.ts')]);
  return { SvcClient, httpTransport, socketTransport };
};

/** The options every admin command takes; the program takes them too, before the command (inheritConnectionOptions). */
export function withConnectionOptions(command: Command): Command {
  return command
    // Only emptiness is checked as --url is parsed (a script's unset variable, which would otherwise act on the data
    // directory, SVC_BASE_URL or not); the URL itself in connectWithKind, whose message masks credentials in it.
    .option('--url <url>', 'talk to a running svc over HTTP(S) instead of the data directory (env SVC_BASE_URL)', parseNonEmpty)
    .option('--api-key <token>', 'bearer token for --url: an admin API key or the bootstrap token (env SVC_API_KEY)', parseNonEmpty)
    .option('-d, --data-dir <dir>', 'data directory (env SVC_DATA_DIR, default ~/.svc)', parseDataDir)
    .option('--json', 'print JSON instead of a table');
}

/**
 * A preAction hook of the program: the connection options given before the command (`svc --url ... keys list`, as git
 * and kubectl take them) or between its group and it (`svc keys --url ... list`) become the command's own, unless it
 * has them after it too: the later one on the line wins, as with an option given twice. The command then reads them
 * as it always has. A command that does not take one (`svc serve` takes --data-dir alone) refuses it rather than run
 * without what it was told.
 */
export function inheritConnectionOptions(_program: Command, command: Command): void {
  // Help acts on nothing: `svc --url URL help keys` shows the help, as `svc --url URL keys --help` does.
  if (isHelpCommand(command)) return;
  const given = new Map<string, { flag: string; value: unknown }>();
  const ancestors: Command[] = [];
  for (let parent = command.parent; parent; parent = parent.parent) ancestors.unshift(parent);
  // Outermost first, so a nearer one (further right on the line) replaces it.
  for (const ancestor of ancestors) {
    for (const option of ancestor.options) {
      const key = option.attributeName();
      if (ancestor.getOptionValueSource(key) === 'cli') given.set(key, { flag: option.long ?? option.flags, value: ancestor.getOptionValue(key) });
    }
  }
  for (const [key, { flag, value }] of given) {
    if (!command.options.some((own) => own.attributeName() === key)) throw new UsageError(`svc ${command.name()} does not take ${flag}`);
    if (command.getOptionValueSource(key) === undefined) command.setOptionValueWithSource(key, value, 'cli');
  }
}

/** A bad command line: printed as `svc: <message>`, exit code 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/** The data directory stays held by a process this command cannot talk to. Exit code 1. */
export class DataDirBusyError extends Error {
  constructor(dataDir: string, owner: OwnerRecord) {
    const lockFile = join(dataDir, OWNER_LOCK_FILE);
    super(
      owner.socketPath
        ? `the data directory ${dataDir} is owned by process ${owner.pid}, but its local socket ${owner.socketPath} ` +
            `does not exist; if that process is not svc serve, remove ${lockFile}`
        : `the data directory ${dataDir} is in use by process ${owner.pid}, which has no local socket ` +
            `(another svc command, or a server started without one); wait for it to finish, stop it, or use --url`,
    );
    this.name = 'DataDirBusyError';
  }
}

/**
 * How a client reaches svc: `http` (--url), `socket` (a running svc serve: other writers exist, so a view can
 * poll for updates) or `in-process` (this process holds the data directory: nothing else writes while it runs).
 */
export type ConnectionKind = 'http' | 'socket' | 'in-process';

/** The data directory's transport: the owner's socket, or in-process once the lock is free. */
async function dataDirTransport(dataDir: string): Promise<{ transport: Transport; kind: ConnectionKind }> {
  // How long a data directory another process holds without a reachable socket is waited for (10 s by default).
  const deadline = Date.now() + loadOwnerWaitMs(currentRun().env);
  ensurePrivateDataDir(dataDir); // before its lock is read: the lock names the socket this command will trust
  warnOfExposedParents(dataDir);
  for (;;) {
    const owner = readLiveOwner(dataDir);
    if (owner === null) {
      try {
        // Loaded only now (cli/in-process.ts says why).
        const { inProcessTransport } = await import('./in-process.ts');
        return { transport: await inProcessTransport(dataDir), kind: 'in-process' };
      } catch (error) {
        // Someone (a starting server, another command) took the lock between our read and our attempt: look again.
        if (!(error instanceof DataDirLockedError)) throw error;
        continue;
      }
    }
    // A server listens on its socket only after taking the lock; a command never has one. Both are worth a wait.
    if (owner.socketPath && existsSync(owner.socketPath)) return { transport: (await loadClient()).socketTransport(owner.socketPath), kind: 'socket' };
    if (Date.now() >= deadline) throw new DataDirBusyError(dataDir, owner);
    await sleep(OWNER_POLL_MS);
  }
}

/** The bearer token a command over `--url` sends: none, or where it comes from (cli/token-hint.ts names it, never its value). */
export type TokenSource = 'none' | '--api-key' | 'SVC_API_KEY';

/** Where the token of `--url` comes from, as connectWithKind picks it (only spaces is no token: transport.ts trims it). */
function tokenSource(apiKeyFlag: string | undefined, env: NodeJS.ProcessEnv): TokenSource {
  if (apiKeyFlag !== undefined) return '--api-key';
  return env.SVC_API_KEY?.trim() ? 'SVC_API_KEY' : 'none';
}

/** A client connected the way DESIGN.md section 4 says; close it when done (`withClient` does). */
export async function connect(options: ConnectionOptions): Promise<SvcClient> {
  return (await connectWithKind(options)).client;
}

/**
 * `connect`, also saying which way it went (the runs TUI live-updates only when another process owns the data) and,
 * over `--url`, where the token it sends comes from (null for the local operator, who sends none).
 */
export async function connectWithKind(options: ConnectionOptions): Promise<{ client: SvcClient; kind: ConnectionKind; token: TokenSource | null }> {
  const { env } = currentRun();
  // A variable of spaces alone is unset, as svc and the client library read their environment.
  const url = options.url ?? (env.SVC_BASE_URL?.trim() || undefined);
  if (url) {
    // A bad --url or SVC_BASE_URL is a usage error; commander's own message would echo the credentials in it.
    try {
      parseBaseUrl(url);
    } catch (error) {
      throw new UsageError(`${options.url ? '--url' : 'SVC_BASE_URL'} ${(error as Error).message} (got "${shownUrl(url)}")`);
    }
    const { SvcClient, httpTransport } = await loadClient();
    return { client: new SvcClient(httpTransport(url, options.apiKey ?? env.SVC_API_KEY ?? null)), kind: 'http', token: tokenSource(options.apiKey, env) };
  }
  // SVC_API_KEY alone is fine (it is also serve's bootstrap token); an explicit --api-key with nowhere to send it is not.
  if (options.apiKey !== undefined) throw new UsageError('--api-key needs --url (or SVC_BASE_URL); the data directory needs no key');
  const overrides = options.dataDir !== undefined ? { dataDir: options.dataDir } : {};
  const dataDir = loadConfig(env, overrides).dataDir;
  if (!dataDir) throw new UsageError('no data directory: pass --data-dir or set SVC_DATA_DIR');
  const { transport, kind } = await dataDirTransport(dataDir);
  const { SvcClient } = await loadClient();
  return { client: new SvcClient(transport), kind, token: null };
}

/** Run `fn` with a connected client and always close it. */
export async function withClient<T>(options: ConnectionOptions, fn: (client: SvcClient) => Promise<T>): Promise<T> {
  const { client, token } = await connectWithKind(options);
  try {
    return await fn(client);
  } catch (error) {
    if (token === null) throw error;
    // Loaded with the client, which connecting loaded already.
    const { withTokenHint } = await import('./token-hint.ts');
    throw withTokenHint(error, token);
  } finally {
    await client.close();
  }
}
