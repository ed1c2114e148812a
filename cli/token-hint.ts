/**
 * What a command over `--url` says when svc refuses its token. svc's 401 reads `Missing or invalid bearer token.`
 * whatever was wrong, and it said nothing of `--api-key` or `SVC_API_KEY`, nor whether the command had sent a token at
 * all: an `SVC_API_KEY` left in the shell (it is also svc serve's bootstrap token) is sent unseen. The hint names where
 * the token came from, never the token.
 */
import { SvcApiError } from '../src/client/client.ts';
import type { TokenSource } from './connection.ts';

/** `error`, with the hint when it is svc's own 401 (its `unauthorized` code: another server's 401 is not about svc's token). */
export function withTokenHint(error: unknown, source: TokenSource): unknown {
  if (!(error instanceof SvcApiError) || error.status !== 401 || error.code !== 'unauthorized') return error;
  const hint =
    source === 'none'
      ? "no token was sent: give --api-key or SVC_API_KEY an admin API key or the server's bootstrap token"
      : `svc refused the token of ${source}: it must be an admin API key this server made and has not revoked, or its bootstrap token`;
  return new Error(`${error.message} (${hint})`, { cause: error });
}
