/**
 * The `svc` executable's entry (bin/svc runs its bundle, dist/svc.cjs): every command group. `svc serve` has an
 * entry of its own, cli/serve-entry.ts, that loads only what serving needs.
 */
import { registerAudit } from './audit.ts';
import { registerCache } from './cache.ts';
import { registerKeys } from './keys.ts';
import { registerOrgs } from './orgs.ts';
import { buildProgram, main } from './program.ts';
import { registerRuns } from './runs.ts';
import { registerServe } from './serve.ts';
import { registerSettings } from './settings.ts';
import { registerUsers } from './users.ts';

// A CommonJS bundle has no top-level await; main() settles every error itself (exiting with its code).
void main(
  buildProgram([registerServe, registerKeys, registerUsers, registerOrgs, registerSettings, registerAudit, registerCache, registerRuns]),
  process.argv,
);
