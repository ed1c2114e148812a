/** `svc settings get|set` (SPEC 2.4, 4.8). Secret values are read from a hidden prompt or stdin, never argv. */
import { password } from '@inquirer/prompts';
import type { Command } from 'commander';
import { isSecretSetting, isSettingKey } from '../src/settings/schema.ts';
import { UsageError, withClient, withConnectionOptions, type ConnectionOptions } from './connection.ts';
import { print, printJson, table } from './output.ts';

/** A value on the command line is JSON when it parses as JSON (numbers, booleans, null, objects), else a string. */
export function parseSettingValue(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '');
}

export function registerSettings(program: Command): void {
  const settings = program.command('settings').description("read and change the tenant's settings");

  withConnectionOptions(settings.command('get'))
    .description('show settings (secrets as [set]); optionally one key')
    .argument('[key]', 'one setting to show')
    .action(async (key: string | undefined, options: ConnectionOptions) => {
      const { settings: values } = await withClient(options, (client) => client.settings.get());
      if (key !== undefined && !(key in values)) throw new UsageError(`unknown setting "${key}"`);
      const shown = key === undefined ? values : { [key]: values[key] };
      if (options.json) return printJson({ settings: shown });
      print(table(Object.entries(shown).map(([name, value]) => ({ name, value })), { name: 'KEY', value: 'VALUE' }));
    });

  withConnectionOptions(settings.command('set'))
    .description('change one setting; the value is JSON when it parses (30, true, null, {"a":"b"}), else a string')
    .argument('<key>', 'setting key')
    .argument('[value]', 'new value (omit for secrets: you are prompted, or use --value-stdin)')
    .option('--value-stdin', 'read the value from stdin (for secrets in scripts)')
    .action(async (key: string, value: string | undefined, options: ConnectionOptions & { valueStdin?: boolean }) => {
      let raw: string;
      const secret = isSettingKey(key) && isSecretSetting(key);
      if (options.valueStdin) raw = await readStdin();
      else if (value !== undefined) {
        if (secret) process.stderr.write(`warning: ${key} is a secret; prefer the prompt or --value-stdin so it stays out of shell history\n`);
        raw = value;
      } else if (secret && process.stdin.isTTY) raw = await password({ message: `${key}:`, mask: '*' });
      else throw new UsageError(`a value for ${key} is required (argument${secret ? ', prompt' : ''} or --value-stdin)`);
      // Secrets are taken verbatim: a secret that happens to look like JSON must not change type.
      const parsed = secret ? raw : parseSettingValue(raw);
      const { settings: values } = await withClient(options, (client) => client.settings.set(key, parsed));
      if (options.json) return printJson({ settings: { [key]: values[key] } });
      print(table([{ name: key, value: values[key] }], { name: 'KEY', value: 'VALUE' }));
    });
}
