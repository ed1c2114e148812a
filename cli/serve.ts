/** `svc serve`: the HTTP service. Flags override SVC_PORT, SVC_HOST, SVC_DATA_DIR. */
import { writeSync } from 'node:fs';
import { note } from './output.ts';
import { Option, type Command } from 'commander';
import { LOG_LEVELS, loadConfig, type ConfigOverrides } from '../src/config.ts';
import { DataDirLockedError } from '../src/store/owner-lock.ts';
import { parseDataDir, parsePort } from './options.ts';
import { currentRun } from './run-context.ts';

export function registerServe(program: Command): void {
  program
    .command('serve')
    .description('run the HTTP service (gateway wires, /api/v1, the account pages)')
    .option('-p, --port <port>', 'TCP port; 0 picks a free port (env SVC_PORT, default 8787)', parsePort)
    .option('-H, --host <host>', 'interface to bind (env SVC_HOST, default 127.0.0.1)')
    .option('-d, --data-dir <dir>', 'data directory (env SVC_DATA_DIR, default ~/.svc)', parseDataDir)
    .addOption(new Option('--log-level <level>', 'log level (env SVC_LOG_LEVEL, default info)').choices(LOG_LEVELS))
    .action(async (options: { port?: number; host?: string; dataDir?: string; logLevel?: ConfigOverrides['logLevel'] }) => {
      const overrides: ConfigOverrides = {};
      if (options.port !== undefined) overrides.port = options.port;
      if (options.host !== undefined) overrides.host = options.host;
      if (options.dataDir !== undefined) overrides.dataDir = options.dataDir;
      if (options.logLevel !== undefined) overrides.logLevel = options.logLevel;
      const config = loadConfig(currentRun().env, overrides);
      // Loaded only now: the server (fastify, the store, undici) and the Node built-ins they require as they load stay
      // out of every other command's start-up, which shares this module through cli/index.ts.
      const [{ capYoungGeneration }, { closeOnSignals, startServer }] = await Promise.all([
        import('../src/core/young-generation.ts'),
        import('../src/server.ts'),
      ]);
      // The server process's memory: 8 MiB semi-spaces instead of V8's 16 (src/core/young-generation.ts).
      capYoungGeneration();
      try {
        const server = await startServer(config);
        // Before the line below: a script that reads it and at once sends SIGTERM must meet the handlers, not the
        // signal's default action (killed without a clean stop), which node leaves in place until a listener is added.
        closeOnSignals(server, config.limits.shutdownTimeoutMs, (line) => note(`${line}\n`));
        // One line on stdout that scripts (and the tests) can read: where svc listens. Written to the descriptor
        // itself: a stdout that fails (a full disk) must not stop the gateway, as it would through process.stdout's
        // error event; the line goes to stderr then.
        const listening = `svc listening on ${server.address} (data ${config.dataDir})\n`;
        try {
          writeSync(1, listening);
        } catch (error) {
          note(`svc: stdout cannot be written (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}); ${listening}`);
        }
      } catch (error) {
        if (error instanceof DataDirLockedError) {
          note(`svc: ${error.message}; stop it first or use another --data-dir\n`);
          process.exit(1);
        }
        throw error;
      }
    });
}
