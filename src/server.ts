/**
 * `svc serve`: own the data directory, open the store, build the app, listen on TCP and on the local operator
 * socket, and shut down gracefully on SIGINT/SIGTERM (stop accepting, finish in-flight requests, flush the
 * write queue, close the file, release the lock).
 */
import type { Server } from 'node:http';
import { once } from 'node:events';
import { chmodSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Config } from './config.ts';
import { cpuQuota } from './core/cpu-quota.ts';
import { noteForOperator } from './core/operator-note.ts';
import { buildApp } from './http/app.ts';
import { addressesToBind, createAppServer } from './http/app-servers.ts';
import { explainListenFailure } from './http/listen-failure.ts';
import { BusyPoll, defaultBusyPollUs } from './http/busy-poll.ts';
import { markLocalSocket } from './http/local-socket.ts';
import { logDestination } from './http/log-destination.ts';
import { RequestArrivals } from './http/request-arrivals.ts';
import { createServices, type Services } from './services.ts';
import { describeUndecryptable, UNDECRYPTABLE_ACTION } from './settings/undecryptable-secrets.ts';
import { ensurePrivateDataDir, MAX_SOCKET_PATH_BYTES, warnOfExposedParents } from './store/data-dir.ts';
import { acquireOwnerLock, type OwnerLock } from './store/owner-lock.ts';
import { commitTraceWriter } from './store/commit-trace.ts';
import { DeferredWriteLosses } from './store/deferred-losses.ts';
import { explainIoFailure } from './store/io-failure.ts';
import { DATA_FILE_NAME, openStore, type Store } from './store/store.ts';

export const SOCKET_FILE = 'svc.sock';

/**
 * How many stored secrets the start decrypts at most to find those of another master key: ~20-40 ms for these, the
 * rest left to readiness item `vault` (an organization holds one: a data file may hold many).
 */
export const START_SECRETS_CHECKED = 1_000;

export interface RunningServer {
  app: FastifyInstance;
  services: Services;
  /** The event loop's busy polling after requests (SVC_BUSY_POLL_US). */
  busyPoll: BusyPoll;
  /** `http://host:port` actually bound (with `--port 0`, the port picked). */
  address: string;
  socketPath: string | null;
  close(): Promise<void>;
  /**
   * For an exit without the clean stop (see `closeOnSignals`): commit the writes the store holds, the ledger's of runs
   * already answered included, and flush them to the disk. Resolves true once they are there, false if that failed
   * or took longer than `deadlineMs`.
   */
  commitQueued(deadlineMs: number): Promise<boolean>;
}

/**
 * The address svc prints and returns as its own: fastify names a server bound to IPv6's wildcard `http://[::]:PORT`,
 * which a browser does not open (for `0.0.0.0` it names `127.0.0.1`); the IPv6 loopback stands in for it the same way.
 */
function openableAddress(address: string): string {
  return address.startsWith('http://[::]:') ? `http://[::1]:${address.slice('http://[::]:'.length)}` : address;
}

export async function startServer(config: Config): Promise<RunningServer> {
  if (config.dataDir === null) throw new Error('svc serve needs a data directory');
  const socketPath = join(config.dataDir, SOCKET_FILE);
  if (Buffer.byteLength(socketPath) > MAX_SOCKET_PATH_BYTES) {
    throw new Error(
      `the data directory path is too long for its local socket: ${socketPath} is ${Buffer.byteLength(socketPath)} bytes, ` +
        `a unix socket's path at most ${MAX_SOCKET_PATH_BYTES}; use a shorter --data-dir`,
    );
  }
  ensurePrivateDataDir(config.dataDir);
  warnOfExposedParents(config.dataDir);
  const lock: OwnerLock = acquireOwnerLock(config.dataDir, socketPath);
  // What a start that fails half-way has opened, to close again: it must not leave a port listening, the data file
  // open or the lock held (an in-process caller, such as a test, goes on running). `servers`: svc's own, besides the
  // app's (src/http/app-servers.ts).
  const opened: { store?: Store; app?: FastifyInstance; servers: Server[] } = { servers: [] };
  let trace: ReturnType<typeof commitTraceWriter> | null = null;
  const busyPoll = new BusyPoll(config.busyPollUs ?? defaultBusyPollUs(cpuQuota()));
  const arrivals = new RequestArrivals();
  // The log on stdout; what it still queues when the process exits is written then (a clean stop writes it itself).
  const logs = config.logLevel === 'silent' ? null : logDestination(1, noteForOperator);
  const flushLogs = () => logs?.flushSync();
  process.on('exit', flushLogs);
  try {
    if (config.traceCommitsFile !== null) trace = commitTraceWriter(config.traceCommitsFile);
    arrivals.watch();
    // Deferred writes lost to a failed commit (a full disk): logged, and reported by readiness (item `storage`).
    const deferredWriteLosses = new DeferredWriteLosses();
    const store = (opened.store = openStore({
      dataDir: config.dataDir,
      onWindowCommitted: trace?.note,
      turnBetweenSlices: arrivals.turn,
      deferredWriteLosses,
    }));
    const services = await createServices(config, store, { deferredWriteLosses });
    // Secrets of another master key read `[set]` and nothing else would say so; svc serves on without them.
    const undecryptable = await services.settings.undecryptableSecrets(null, START_SECRETS_CHECKED);
    if (undecryptable.secrets > 0) {
      noteForOperator(
        `${describeUndecryptable(undecryptable)}: svc was started under another key than they were stored under, and ` +
          `serves on without them. ${UNDECRYPTABLE_ACTION} GET /api/v1/readiness (item vault) counts them.`,
      );
    }
    const app = (opened.app = await buildApp(services, { logger: logs === null ? false : { level: config.logLevel, stream: logs } }));
    deferredWriteLosses.logTo(app.log);
    // Runs a stopped process left running, found before any request can start one (src/evidence/interrupted.ts).
    const interrupted = await services.interruptedRuns.find();
    const [firstAddress = config.host, ...furtherAddresses] = await addressesToBind(config.host);
    const address = openableAddress(
      await app.listen({ port: config.port, host: firstAddress }).catch((error: unknown) => {
        throw explainListenFailure(error, firstAddress, config.port);
      }),
    );
    // `localhost`'s other addresses (::1), on the port the first got.
    for (const host of furtherAddresses) {
      const server = createAppServer(app, config.limits);
      try {
        server.listen((app.server.address() as AddressInfo).port, host);
        await once(server, 'listening');
        opened.servers.push(server);
      } catch (error) {
        // As fastify did: the name's first address serves; one this machine cannot bind (no IPv6) is left out.
        app.log.warn({ err: error }, `not listening on ${host}, an address of ${config.host}`);
      }
    }
    // Finished after the port opens: a data file left by a crash under load may hold many, and none of it is urgent.
    const finishingInterrupted =
      interrupted.length === 0
        ? Promise.resolve()
        : services.interruptedRuns.finish(interrupted).then(
            (count) => app.log.warn(`${count} run(s) left running by an earlier process finished as failed (interrupted)`),
            (error) => app.log.error({ err: error }, 'finishing runs left running by an earlier process failed'),
          );
    busyPoll.watchHttpServers();
    // With `--port 0` the port is known only now; e-mailed links (when SVC_APP_BASE_URL is unset) must carry it.
    if (config.accounts.appBaseUrl === null && config.port === 0) {
      const links = new URL(config.accounts.linkBaseUrl);
      links.port = new URL(address).port;
      config.accounts.linkBaseUrl = links.origin;
    }

    // The local socket: same routing, no TCP; only this machine's users with access to the 0700 data dir reach it.
    rmSync(socketPath, { force: true });
    const local = createAppServer(app, config.limits);
    opened.servers.push(local);
    local.on('connection', markLocalSocket);
    await new Promise<void>((resolve, reject) => {
      local.once('error', reject);
      // The socket's file is made by the bind, inside listen(), with the mode the umask leaves (0777 under umask 000),
      // and a connection on it is the platform admin: made under umask 0177 it is 0600 from its first moment, not
      // only once the chmod below has run. The process's umask is given back at once (nothing else runs in between).
      const umask = process.umask(0o177);
      try {
        local.listen(socketPath, () => resolve());
      } finally {
        process.umask(umask);
      }
    });
    chmodSync(socketPath, 0o600);

    const stopRetention = services.retention.schedule({
      intervalMs: config.limits.retentionIntervalMs,
      initialDelayMs: Math.min(30_000, config.limits.retentionIntervalMs),
      onError: (error) => app.log.error({ err: error }, 'retention pass failed'),
    });
    // Organizations deleted before a restart may still have data to purge.
    services.retention.purgeDeleted().catch((error) => app.log.error({ err: error }, 'purging deleted organizations failed'));

    let closing: Promise<void> | null = null;
    const running: RunningServer = {
      app,
      services,
      busyPoll,
      address,
      socketPath,
      close() {
        closing ??= (async () => {
          // Before either server stops accepting: from here every answer ends its connection, so that the servers'
          // close, which waits for their connections, ends with the last in-flight answer (src/http/draining.ts).
          app.draining.begin();
          // An answer ended but still being written would be cut off by the close below (src/http/draining.ts).
          await app.draining.flushed();
          // node's close also closes the connections idle right now.
          const ownClosed = Promise.all(opened.servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))));
          await app.close(); // stops accepting on TCP, waits for in-flight requests
          await ownClosed;
          await finishingInterrupted;
          busyPoll.stop();
          arrivals.stop();
          await stopRetention();
          await store.close(); // flushes the write queue, then closes the file
          trace?.close();
          rmSync(socketPath, { force: true });
          lock.release();
          process.off('exit', flushLogs);
          flushLogs();
        })();
        return closing;
      },
      commitQueued(deadlineMs) {
        if (!store.isOpen) return Promise.resolve(true);
        let timer: NodeJS.Timeout | undefined;
        const gaveUp = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), deadlineMs)));
        const committed = store.flushToDisk().then(
          () => true,
          () => false,
        );
        return Promise.race([committed, gaveUp]).finally(() => clearTimeout(timer));
      },
    };
    return running;
  } catch (error) {
    // A write of the start (the bootstrap admin's) that failed is explained before the store closes (io-failure.ts).
    const failure = explainIoFailure(join(config.dataDir, DATA_FILE_NAME), error);
    for (const server of opened.servers) if (server.listening) server.close();
    await opened.app?.close().catch(() => {});
    busyPoll.stop();
    arrivals.stop();
    if (opened.store?.isOpen) await opened.store.close().catch(() => {});
    trace?.close();
    lock.release();
    process.off('exit', flushLogs);
    flushLogs();
    throw failure;
  }
}

/**
 * How long an exit without the clean stop (the shutdown timed out, a second signal) may wait for the store to commit
 * and flush what it holds: the runs answered in the ledger's last window (<= 20 ms) are otherwise lost though the
 * process could still write them. A healthy disk takes milliseconds; the bound is for one that hangs.
 */
export const FORCED_EXIT_COMMIT_MS = 5_000;

/**
 * Install SIGINT/SIGTERM handlers that close the server gracefully, bounded by the shutdown timeout. Past it, or on a
 * second signal, the process exits 1 once the store's queued writes are committed (at most `FORCED_EXIT_COMMIT_MS`);
 * a signal while they are being committed exits at once.
 */
export function closeOnSignals(server: RunningServer, timeoutMs: number, log: (line: string) => void): void {
  let signalled = false;
  let exiting = false;
  const exitWithoutCleanStop = (why: string) => {
    if (exiting) {
      log(`${why} while committing, exiting now`);
      process.exit(1);
    }
    exiting = true;
    log(`${why}, committing the queued writes and exiting`);
    void server.commitQueued(FORCED_EXIT_COMMIT_MS).then((committed) => {
      if (!committed) log(`svc: the queued writes were not committed within ${FORCED_EXIT_COMMIT_MS} ms, exiting without them`);
      process.exit(1);
    });
  };
  const onSignal = (signal: NodeJS.Signals) => {
    if (signalled) {
      exitWithoutCleanStop(`svc: second ${signal}`);
      return;
    }
    signalled = true;
    log(`svc: ${signal} received, finishing in-flight requests`);
    const timer = setTimeout(() => exitWithoutCleanStop('svc: shutdown timed out'), timeoutMs);
    timer.unref();
    server.close().then(
      () => {
        log('svc: stopped');
        process.exit(0);
      },
      (error: unknown) => {
        log(`svc: error during shutdown: ${(error as Error).message}`);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
}
