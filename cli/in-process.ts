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
import { acquireOwnerLock } from '../src/store/owner-lock.ts';
import { openStore } from '../src/store/store.ts';

export async function inProcessTransport(dataDir: string): Promise<Transport> {
  const config = loadConfig({ ...process.env, SVC_LOG_LEVEL: 'silent' }, { dataDir });
  const lock = acquireOwnerLock(dataDir, null);
  try {
    const store = openStore({ dataDir });
    try {
      const services = await createServices(config, store);
      const app = await buildApp(services);
      // Inject requests carry the per-process secret that marks the local operator (src/http/local-socket.ts).
      return injectTransport(app, { [LOCAL_OPERATOR_HEADER]: LOCAL_OPERATOR_SECRET }, async () => {
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
    } catch (error) {
      await store.close();
      throw error;
    }
  } catch (error) {
    lock.release();
    throw error;
  }
}
