/** `svc settings get|set` (SPEC 2.4, 4.8). Secret values are read from a hidden prompt or stdin, never argv. */
import type { Command } from 'commander';
import { isSecretSetting, isSettingActedOn, SETTING_KEYS, type SettingKey } from '../src/settings/schema.ts';
import { UsageError, withClient, withConnectionOptions, type ConnectionOptions } from './connection.ts';
import { oneOf } from './options.ts';
import { note, print, printJson, table } from './output.ts';
import { HIDDEN_ANSWER, loadPrompts } from './prompts.ts';
import { currentRun } from './run-context.ts';

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
  for await (const chunk of currentRun().stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '');
}

export function registerSettings(program: Command): void {
  const settings = program
    .command('settings')
    .description("read and change the tenant's settings")
    .addHelpText(
      'after',
      `
Examples:
  svc settings get
  svc settings get retention_days --json
  svc settings set retention_days 30
  svc settings set model_substitutions '{"gpt-4o":"gpt-4o-mini"}'
  svc settings set webhook_secret                      prompts without echo
  printf %s "$SECRET" | svc settings set webhook_secret --value-stdin
  svc settings set webhook_secret null                 clears it`,
    );

  withConnectionOptions(settings.command('get'))
    .description('show settings (secrets as [set]); optionally one key')
    .argument('[key]', 'one setting to show', oneOf(SETTING_KEYS))
    .action(async (key: SettingKey | undefined, options: ConnectionOptions) => {
      const { settings: values } = await withClient(options, (client) => client.settings.get());
      const shown = key === undefined ? values : { [key]: values[key] };
      if (options.json) return printJson({ settings: shown });
      print(table(Object.entries(shown).map(([name, value]) => ({ name, value })), { name: 'KEY', value: 'VALUE' }));
    });

  withConnectionOptions(settings.command('set'))
    .description('change one setting; the value is JSON when it parses (30, true, null, {"a":"b"}), else a string')
    .argument('<key>', 'setting key (svc settings get lists them)', oneOf(SETTING_KEYS))
    .argument('[value]', 'new value; for a secret omit it (hidden prompt, or --value-stdin) or pass null to clear it')
    .option('--value-stdin', 'read the value from stdin, taken verbatim less one trailing newline (for secrets in scripts)')
    .action(async (key: SettingKey, value: string | undefined, options: ConnectionOptions & { valueStdin?: boolean }) => {
      const secret = isSecretSetting(key);
      let parsed: unknown;
      if (options.valueStdin) {
        if (value !== undefined) throw new UsageError('give the value either as an argument or with --value-stdin, not both');
        // On a terminal, stdin echoes what is typed: the secret would stand on the screen (and in its scrollback).
        if (secret && currentRun().stdin.isTTY) {
          throw new UsageError(`--value-stdin reads a pipe, but stdin is a terminal, which would show ${key}: leave it out to be asked in a hidden prompt`);
        }
        const raw = await readStdin();
        // An unset variable piped in: no value, not a setting of "" (a secret's clearing is `null`, said outright).
        if (raw === '') throw new UsageError('--value-stdin: stdin held no value (pass null as the value to clear the setting)');
        // Secrets are taken verbatim: a secret that happens to look like JSON must not change type.
        parsed = secret ? raw : parseSettingValue(raw);
      } else if (value !== undefined) {
        // A secret on the command line would land in shell history and the process list; only clearing is allowed.
        if (secret && value !== 'null') {
          throw new UsageError(`${key} is a secret: omit the value to be prompted for it, or pipe it with --value-stdin`);
        }
        parsed = parseSettingValue(value);
      } else if (secret && currentRun().stdin.isTTY) {
        // The prompt draws on stderr: stdout stays data only, even when it is piped.
        const { password } = await loadPrompts(); // only now: see cli/prompts.ts
        parsed = await password(
          { message: `${key}:`, ...HIDDEN_ANSWER, validate: (text) => text.length > 0 || 'empty; pass null as the value to clear it' },
          { output: currentRun().stderr },
        );
      } else {
        throw new UsageError(
          secret ? `a value for ${key} is required: run in a terminal to be prompted, or use --value-stdin` : `a value for ${key} is required`,
        );
      }
      const { settings: values } = await withClient(options, (client) => client.settings.set(key, parsed));
      // Saved, but an operator turning on streaming_dlp must not believe answers are now masked.
      if (!isSettingActedOn(key)) note(`svc: ${key} is saved; this build of svc does not act on it yet (docs/api.md, "Settings").`);
      if (options.json) return printJson({ settings: { [key]: values[key] } });
      print(table([{ name: key, value: values[key] }], { name: 'KEY', value: 'VALUE' }));
    });
}
