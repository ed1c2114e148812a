/**
 * The entry of `svc serve` (bin/svc runs its bundle, dist/serve.cjs, for that command alone): the same program as
 * cli/index.ts with only the serve command, so none of the admin commands' modules load. `svc serve ...` parses and
 * fails exactly as through the full program: a subcommand's options, help and errors are its own.
 */
import { main } from './program.ts';
import { registerServe } from './serve.ts';

// A CommonJS bundle has no top-level await; main() settles every error itself (exiting with its code).
void main([registerServe]);
