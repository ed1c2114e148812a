/** Every command group of the `svc` executable (cli/index.ts), in the order its help lists them. */
import { registerAudit } from './audit.ts';
import { registerCache } from './cache.ts';
import { registerKeys } from './keys.ts';
import { registerOrgs } from './orgs.ts';
import type { RegisterCommands } from './program.ts';
import { registerRuns } from './runs.ts';
import { registerServe } from './serve.ts';
import { registerSettings } from './settings.ts';
import { registerUsers } from './users.ts';

export const COMMAND_GROUPS: readonly RegisterCommands[] = [
  registerServe,
  registerKeys,
  registerUsers,
  registerOrgs,
  registerSettings,
  registerAudit,
  registerCache,
  registerRuns,
];
