/**
 * Raw HTTP over a TCP socket, for requests no HTTP client will send (repeated headers, odd framing, bytes that are not
 * HTTP): the bytes are written as given.
 */
import { connect } from 'node:net';

export interface RawAnswer {
  status: number;
  /** The status line and header section, as received. */
  headers: string;
  /** The body parsed as JSON, or null when there is none. */
  body: unknown;
}

/** Where to connect: a TCP port on 127.0.0.1, a port on another address, or the path of a local socket (svc's `svc.sock`). */
export type RawTarget = number | { host: string; port: number } | string;

/** Write `bytes` on a new connection and read until the server closes it: everything it answered, as text. */
export function exchangeText(to: RawTarget, bytes: string | Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const send = () => socket.write(bytes);
    const socket =
      typeof to === 'string' ? connect(to, send) : typeof to === 'number' ? connect(to, '127.0.0.1', send) : connect(to.port, to.host, send);
    let text = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => (text += chunk));
    socket.on('error', reject);
    socket.on('close', () => resolve(text));
  });
}

/** `exchangeText` for one answer (send `Connection: close` to end it), its body parsed. */
export async function exchange(to: RawTarget, bytes: string | Buffer): Promise<RawAnswer> {
  const text = await exchangeText(to, bytes);
  const [head = '', body = ''] = text.split('\r\n\r\n', 2);
  return { status: Number(head.split(' ')[1]), headers: head, body: body ? JSON.parse(body) : null };
}
