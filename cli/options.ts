/** Option parsers shared by CLI commands; a bad value is a usage error (exit code 2). */
import { InvalidArgumentError, type Command } from 'commander';

/** One of `values`, as its type: for options and arguments whose values the CLI knows (roles, statuses, tiers). */
export const oneOf =
  <T extends string>(values: readonly T[]) =>
  (value: string): T => {
    if (!(values as readonly string[]).includes(value)) throw new InvalidArgumentError(`must be one of ${values.join(', ')}`);
    return value as T;
  };

export function parsePort(value: string): number {
  const port = Number(value);
  if (!/^\d+$/.test(value) || port > 65535) throw new InvalidArgumentError('must be an integer from 0 to 65535');
  return port;
}

export function parseNonNegativeInt(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n)) throw new InvalidArgumentError('must be a non-negative integer');
  return n;
}

export function parsePositiveInt(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < 1) throw new InvalidArgumentError('must be a positive integer');
  return n;
}

/**
 * Any value that must say something: a name, an e-mail address, an id, a filter. An empty one is mostly a script's unset
 * variable (`--org "$ORG"`), which some commands would otherwise read as the option left out (and act in the default
 * organization, or list everything).
 */
export function parseNonEmpty(value: string): string {
  if (value.trim() === '') throw new InvalidArgumentError('must not be empty');
  return value;
}

/**
 * An id of a kind svc makes with a type prefix (src/core/ids.ts: `key_...`, `inv_...`): something else, such as a key's
 * name given in its place, names nothing. Only the prefix is checked; whether the id exists is the server's answer.
 */
export function idParser(prefix: string, kind: string): (value: string) => string {
  return (value) => {
    if (!hasIdForm(parseNonEmpty(value), prefix)) throw new InvalidArgumentError(`must be ${kind} id (${prefix}_...)`);
    return value;
  };
}

/** Whether `value` is of the form of an id of `prefix`: the prefix alone (`usr_`, a script's variable cut short) is not. */
export function hasIdForm(value: string, prefix: string): boolean {
  return value.startsWith(`${prefix}_`) && value.length > prefix.length + 1;
}

/**
 * A data directory: not empty. `--data-dir ""` (a script's unset variable) would resolve to the working directory and
 * make it one, writing the data file and the master key there. Nor starting with `=`: a short option's value follows
 * it as is, so `-d=/srv/svc` (the form pflag takes, as in kubectl) gives `=/srv/svc`, a new, empty data directory
 * under the working directory.
 */
export function parseDataDir(value: string): string {
  if (parseNonEmpty(value).startsWith('=')) throw new InvalidArgumentError('must not start with "=" (write -d DIR or --data-dir=DIR)');
  return value;
}

/** A page size from 1 to `max` (the endpoint's own limit): checked here, so a bad one is a usage error, not an API error. */
export function limitParser(max: number): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (!/^\d+$/.test(value) || n < 1 || n > max) throw new InvalidArgumentError(`must be an integer from 1 to ${max}`);
    return n;
  };
}

/**
 * An http(s) base URL such as `http://127.0.0.1:8787`. Credentials in it are refused (the token goes in --api-key or
 * SVC_API_KEY; fetch would refuse them anyway), and so are a query and a fragment, which the paths would land in.
 */
export function parseBaseUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new InvalidArgumentError('must be an http(s) URL such as http://127.0.0.1:8787');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new InvalidArgumentError('must be an http(s) URL such as http://127.0.0.1:8787');
  if (url.username || url.password) throw new InvalidArgumentError('must not hold credentials: give the token with --api-key or SVC_API_KEY');
  if (url.search || url.hash) throw new InvalidArgumentError('must be a base address without a query or fragment, such as http://127.0.0.1:8787');
  return value;
}

/**
 * `value` as an error message may show it: the credentials of a URL (`http://user:password@host`) masked, and its query
 * and fragment, where a link copied from a browser or a provider's console carries a token (`?token=`, `#access_token=`).
 */
export function shownUrl(value: string): string {
  return value.replace(/^([^:/?#]*:\/\/)[^/?#]*@/, '$1***@').replace(/([?#])[^]*$/, '$1***');
}

/**
 * Tells whether a value was typed as `--long=value`: commander hands `--name=--admin` over as it hands `--name
 * --admin`, the value "--admin" either way, though only the first is a value given on purpose. Each such word of
 * `argv` (before a `--`, after which words are operands) vouches for one value: `--name=--admin --name --admin` is
 * still refused. One per parse, shared by every command of the program, as an option may be given at several levels.
 */
export function typedWithEquals(argv: readonly string[]): (long: string, value: string) => boolean {
  const end = argv.indexOf('--');
  const left = argv.slice(0, end === -1 ? argv.length : end);
  return (long, value) => {
    const index = left.indexOf(`${long}=${value}`);
    if (index !== -1) left.splice(index, 1);
    return index !== -1;
  };
}

/**
 * Makes each value option of `command` refuse, as its value left out, one of the command's own flags: commander takes
 * whatever follows a value option, so `svc keys create --name --admin` made a key named "--admin" (not an admin one)
 * and `--app --json` pinned a key to the app "--json" and printed a table. A flag of another command stays a value
 * (`--name -v` is "-v": the root's -v is no option of `keys create`), and so does any other text starting with `-`,
 * and any value typed with `=` (`--name=--admin`, as `typedWithEquals` tells). Run it after the command's options are
 * all added.
 */
export function refuseOwnFlagsAsValues(command: Command, typedAsValue: (long: string, value: string) => boolean): void {
  const flags = new Set(['-h', '--help']);
  for (const option of command.options) {
    if (option.short) flags.add(option.short);
    if (option.long) flags.add(option.long);
  }
  const isOwnFlag = (value: string) => flags.has(value) || (value.startsWith('--') && value.includes('=') && flags.has(value.slice(0, value.indexOf('='))));
  for (const option of command.options) {
    if (!option.required && !option.optional) continue;
    const parse = option.parseArg;
    option.parseArg = <T>(value: string, previous: T): T => {
      if (isOwnFlag(value) && !(option.long && typedAsValue(option.long, value))) {
        command.error(`error: option '${option.flags}' argument missing (got ${value}, an option of this command)`, { code: 'commander.optionMissingArgument' });
      }
      return parse ? parse(value, previous) : (value as T);
    };
  }
}
