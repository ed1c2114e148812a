/**
 * The `svc` executable's entry (bin/svc runs its bundle, dist/svc.cjs): every command group. `svc serve` has an
 * entry of its own, cli/serve-entry.ts, that loads only what serving needs.
 */
import { COMMAND_GROUPS } from './command-groups.ts';
import { main } from './program.ts';

// A CommonJS bundle has no top-level await; main() settles every error itself (exiting with its code).
void main(COMMAND_GROUPS);
