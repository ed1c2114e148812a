/**
 * Why `svc serve` could not listen on its TCP address, in words, with the flag to change. node's own error reads
 * `listen EADDRINUSE: address already in use 127.0.0.1:8787`, which names the errno but not what to do, and is the
 * first error a new user starting svc beside another server (or a second checkout) meets.
 */
import { isIPv6 } from 'node:net';

export class ListenFailure extends Error {
  constructor(message: string, cause: unknown) {
    super(message, { cause });
    this.name = 'ListenFailure';
  }
}

/** `host:port` as it stands in a URL: an IPv6 address bracketed. */
function hostPort(host: string, port: number): string {
  return `${isIPv6(host) ? `[${host}]` : host}:${port}`;
}

/**
 * `error`, thrown by listening on `host`:`port`, said with the address, its cause and the fix, when its errno is one a
 * configuration causes; else `error` itself. The errno stays in the line (scripts and the tests retry on EADDRINUSE).
 */
export function explainListenFailure(error: unknown, host: string, port: number): unknown {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  switch (code) {
    case 'EADDRINUSE':
      return new ListenFailure(
        `cannot listen on ${hostPort(host, port)}: the port is in use by another process (EADDRINUSE); ` +
          'stop that process, or choose another port with --port or SVC_PORT (0 picks a free one)',
        error,
      );
    case 'EACCES':
      return new ListenFailure(
        `cannot listen on ${hostPort(host, port)}: permission denied (EACCES); ports below 1024 need privileges: ` +
          'choose another port with --port or SVC_PORT',
        error,
      );
    case 'EADDRNOTAVAIL':
      return new ListenFailure(
        `cannot listen on ${host}: no interface of this machine has that address (EADDRNOTAVAIL); ` +
          'choose one it has with --host or SVC_HOST (127.0.0.1, or 0.0.0.0 for every interface)',
        error,
      );
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_FAIL':
      return new ListenFailure(
        `cannot listen on ${host}: the name does not resolve to an address (${code}); ` +
          'give an address, or a name this machine resolves, with --host or SVC_HOST',
        error,
      );
    default:
      return error;
  }
}
