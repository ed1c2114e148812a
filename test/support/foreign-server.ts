/** A listening node:http server that is not svc, for the reference client's tests of answers svc never gives. */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestContext } from 'node:test';

/** A node:http server answering every request with `answer`; closed after the test. Resolves with its base URL. */
export async function foreignServer(t: TestContext, answer: (res: ServerResponse, req: IncomingMessage) => void): Promise<string> {
  const server = createServer((req, res) => answer(res, req));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}
