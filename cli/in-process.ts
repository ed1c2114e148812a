/**
 * The in-process way of reaching svc (cli/connection.ts, way 3): take the data directory's owner lock, open the store,
 * build the same app as `svc serve` and send requests through `app.inject` as the local operator. A module of its own,
 * imported only when a command takes that way: fastify, the store and the services, with the Node built-ins they
 * require as they load (http, https, tls, child_process, dns, ...), stay out of `svc --version`, `--help` and every
 * command that reaches svc over `--url` or a running server's socket.
 */
import { loadConfig } from '../src/config.ts';
import { injectTransport, type Transport } from '../src/client/transport.ts';
import { buildApp } from '../src/http/app.ts';
import { LOCAL_OPERATOR_HEADER, LOCAL_OPERATOR_SECRET } from '../src/http/local-socket.ts';
import { createServices } from '../src/services.ts';
import { DataFileIoError } from '../src/store/io-failure.ts';
import { acquireOwnerLock } from '../src/store/owner-lock.ts';
import { openStore } from '../src/store/store.ts';
import { currentRun } from './run-context.ts';

export async function inProcessTransport(dataDir: string): Promise<Transport> {
  const config = loadConfig({ ...currentRun().env, SVC_LOG_LEVEL: 'silent' }, { dataDir });
  const lock = acquireOwnerLock(dataDir, null);
  try {
    const store = openStore({ dataDir });
    try {
      const services = await createServices(config, store);
      const failures = dataFileFailures();
      const app = await buildApp(services, { onInternalError: failures.record });
      // Inject requests carry the per-process secret that marks the local operator (src/http/local-socket.ts).
      const transport = injectTransport(app, { [LOCAL_OPERATOR_HEADER]: LOCAL_OPERATOR_SECRET }, async () => {
        try {
          await app.close();
        } finally {
          // An organization deleted by this command is being purged in the background: stopped here, resumed by the
          // next start, rather than failing on the closed store.
          await services.retention.stop();
          await store.close();
          lock.release();
        }
      });
      return throwingDataFileFailures(transport, failures);
    } catch (error) {
      await store.close();
      throw error;
    }
  } catch (error) {
    lock.release();
    throw error;
  }
}

/**
 * The data file's I/O failures (a full disk, a file size limit: src/store/io-failure.ts) behind the app's `500
 * internal` answers, by request id. Over HTTP such a body stays generic; this command owns the data directory on the
 * same machine, and `HTTP 500 internal` told it nothing of why its write failed.
 */
function dataFileFailures() {
  const byRequest = new Map<string, DataFileIoError>();
  return {
    record(cause: unknown, requestId: string): void {
      if (cause instanceof DataFileIoError) byRequest.set(requestId, cause);
    },
    /** The failure behind the answer with these headers, forgotten as it is taken; undefined if there was none. */
    take(headers: Record<string, string>): DataFileIoError | undefined {
      const requestId = headers['x-request-id'] ?? '';
      const failure = byRequest.get(requestId);
      byRequest.delete(requestId);
      return failure;
    },
  };
}

/**
 * `transport`, but an answer a data file failure caused is that failure, thrown: the command prints it as `svc serve`
 * prints one at its start (`svc: cannot write the data file <dir>/svc.db: no space left on the device; free some space
 * on it`) and exits 1.
 */
function throwingDataFileFailures(transport: Transport, failures: ReturnType<typeof dataFileFailures>): Transport {
  const checked = <Answer extends { headers: Record<string, string> }>(answer: Answer): Answer => {
    const failure = failures.take(answer.headers);
    if (failure !== undefined) throw failure;
    return answer;
  };
  return {
    request: async (...call) => checked(await transport.request(...call)),
    stream: async (...call) => checked(await transport.stream(...call)),
    close: () => transport.close(),
  };
}
