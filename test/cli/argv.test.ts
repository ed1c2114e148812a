/**
 * Where on the command line options go (in-process on a temp data directory): the root's options before the command, a
 * command's own after it, and option values that look like options. Most lines are parsed inside the test process
 * (runSvcInProcess: the output and the exit code are what they test); each command group, svc serve's own bundle, the
 * working directory and a line read from the process's own argv (bin/svc's parse) also run as bin/svc.
 */
import assert from 'node:assert/strict';
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test, { before, describe } from 'node:test';
import { runSvcInProcess } from '../support/in-process-cli.ts';
import { ensureBundle, runSvc, tempDir } from '../support/process.ts';

before(ensureBundle);

describe('the command line', { concurrency: true }, () => {
  test("the root's -v/--version is not read inside a command's arguments: it is a value there, or an unknown option", async (t) => {
    const dataDir = tempDir(t);
    // A script's `--name "$NAME"` with NAME=-v printed the version and exited 0 having created nothing. Through bin/svc,
    // whose program parses the process's own argv.
    const named = await runSvc(['keys', 'create', '--data-dir', dataDir, '--json', '--name', '-v']);
    assert.equal(named.code, 0, named.stderr);
    assert.equal(JSON.parse(named.stdout).key.name, '-v');
    for (const flag of ['-v', '--version']) {
      const misplaced = await runSvcInProcess(['keys', 'list', '--data-dir', dataDir, flag]);
      assert.equal(misplaced.code, 2, `keys list ${flag}: ${misplaced.stdout}`);
      assert.match(misplaced.stderr, new RegExp(`unknown option '${flag}'`));
    }
  });

  test("a value option followed by one of its command's own flags is missing its value, not given that flag as it", async (t) => {
    const dataDir = tempDir(t);
    // `--name --admin` created a non-admin key named "--admin"; `--app --json` pinned a key to the app "--json" and
    // printed a table, exit 0 both.
    const cases = [
      ['keys', 'create', '--name', '--admin'],
      ['keys', 'create', '--name', 'ci', '--app', '--json'],
      ['keys', 'create', '-n', '--mode=observe'],
      ['keys', 'create', '--name', '-d', dataDir],
      ['keys', 'create', '--name', '--help'],
      ['keys', 'list', '--url', '--json'],
      ['users', 'create', '--email', '--password-stdin'],
      ['orgs', '--url', '--json', 'list'],
      ['--data-dir', '--json', 'keys', 'list'],
    ];
    // The orgs group, which no other test here runs through bin/svc, there.
    const results = await Promise.all(cases.map((argv) => (argv[0] === 'orgs' ? runSvc : runSvcInProcess)([...argv, '--data-dir', dataDir])));
    results.forEach((result, i) => {
      const argv = cases[i]!.join(' ');
      assert.equal(result.code, 2, `${argv}: ${result.stdout}${result.stderr}`);
      assert.match(result.stderr, /argument missing/, argv);
      assert.equal(result.stdout, '', argv);
    });
    assert.deepEqual(readdirSync(dataDir), [], 'refused before the data directory was touched');
  });

  test('a value given with = (--name=--admin) is the value typed on purpose, even one that reads as a flag of the command', async (t) => {
    const dataDir = tempDir(t);
    // Commander hands --name=--admin over as it hands --name --admin, so it was refused as a value left out. Through
    // bin/svc: which values were typed with = is read from the process's argv there.
    const created = await runSvc(['keys', 'create', '--data-dir', dataDir, '--json', '--name=--admin', '--app=--json']);
    assert.equal(created.code, 0, created.stderr);
    const { key } = JSON.parse(created.stdout);
    assert.deepEqual([key.name, key.appId, key.admin], ['--admin', '--json', false]);
    // A = value stands for its own option, once: the same text left out after another option, or after the same one
    // again, is still refused.
    for (const argv of [
      ['keys', 'create', '--name=--admin', '--app', '--admin'],
      ['keys', 'create', '--name', '--admin', '--name=--admin'],
      ['keys', 'create', '--name=--admin', '--name', '--admin'],
      ['keys', 'create', '--name', '--admin', '--', '--name=--admin'],
    ]) {
      const refused = await runSvcInProcess([...argv, '--data-dir', dataDir]);
      assert.equal(refused.code, 2, `${argv.join(' ')}: ${refused.stdout}`);
      assert.match(refused.stderr, /argument missing/, argv.join(' '));
    }
  });

  test('the options of every admin command also go before the command, as git and kubectl take them; the one after wins', async (t) => {
    const [dataDir, other] = [tempDir(t), tempDir(t)];
    const created = await runSvcInProcess(['--data-dir', dataDir, '--json', 'keys', 'create', '--name', 'before']);
    assert.equal(created.code, 0, created.stderr);
    assert.equal(JSON.parse(created.stdout).key.name, 'before', '--json before the command');
    const names = async (argv: string[]) => {
      const result = await runSvcInProcess(argv);
      assert.equal(result.code, 0, `${argv.join(' ')}: ${result.stderr}`);
      return JSON.parse(result.stdout).keys.map((key: { name: string }) => key.name);
    };
    assert.deepEqual(await names(['-d', dataDir, 'keys', 'list', '--json']), ['before']);
    assert.deepEqual(await names(['keys', 'list', '--json', '-d', dataDir]), ['before'], 'after the command, as before');
    assert.deepEqual(await names(['-d', dataDir, 'keys', 'list', '--json', '-d', other]), [], 'the --data-dir after the command');
    // --url and --api-key: read (a refused URL, an unreachable one, a key with no URL), checked alike; the audit
    // command, which no other test here runs through bin/svc, there.
    const [bad, unreachable, later, keyWithoutUrl] = await Promise.all([
      runSvcInProcess(['--url', 'ftp://127.0.0.1:1', 'keys', 'list']),
      runSvcInProcess(['--url', 'http://127.0.0.1:1', '--api-key', 'svc_x', 'keys', 'list']),
      runSvcInProcess(['--url', 'ftp://127.0.0.1:1', 'keys', 'list', '--url', 'http://127.0.0.1:1']),
      runSvc(['--api-key', 'svc_x', 'audit', '--data-dir', other]),
    ]);
    assert.equal(bad.code, 2, bad.stderr);
    assert.match(bad.stderr, /^svc: --url must be an http\(s\) URL/m);
    assert.equal(unreachable.code, 1, unreachable.stderr);
    assert.match(unreachable.stderr, /cannot reach svc at http:\/\/127\.0\.0\.1:1/);
    assert.equal(later.code, 1, later.stderr);
    assert.match(later.stderr, /cannot reach svc at http:\/\/127\.0\.0\.1:1/, 'the --url after the command');
    assert.equal(keyWithoutUrl.code, 2, keyWithoutUrl.stderr);
    assert.match(keyWithoutUrl.stderr, /--api-key needs --url/);
  });

  test('the options of every admin command also go between its group and it (svc keys --url URL list); the later one wins', async (t) => {
    const [dataDir, other] = [tempDir(t), tempDir(t)];
    // They were an unknown option of the group (exit 2), where before and after the command they were read.
    const created = await runSvcInProcess(['keys', '-d', dataDir, '--json', 'create', '--name', 'between']);
    assert.equal(created.code, 0, created.stderr);
    assert.equal(JSON.parse(created.stdout).key.name, 'between', '--json between the group and its command');
    const names = async (argv: string[]) => {
      const result = await runSvcInProcess(argv);
      assert.equal(result.code, 0, `${argv.join(' ')}: ${result.stderr}`);
      return JSON.parse(result.stdout).keys.map((key: { name: string }) => key.name);
    };
    assert.deepEqual(await names(['-d', other, 'keys', '--data-dir', dataDir, 'list', '--json']), ['between'], 'the group\'s over the program\'s');
    assert.deepEqual(await names(['keys', '-d', dataDir, 'list', '--json', '-d', other]), [], 'the command\'s over the group\'s');
    // The users and settings groups through bin/svc, which no other test here runs there.
    const [bad, unreachable, settings] = await Promise.all([
      runSvcInProcess(['keys', '--url', 'ftp://127.0.0.1:1', 'list']),
      runSvc(['users', '--url', 'http://127.0.0.1:1', '--api-key', 'svc_x', 'list']),
      runSvc(['settings', '--data-dir', dataDir, 'get', 'retention_days', '--json']),
    ]);
    assert.equal(bad.code, 2, bad.stderr);
    assert.match(bad.stderr, /^svc: --url must be an http\(s\) URL/m);
    assert.equal(unreachable.code, 1, unreachable.stderr);
    assert.match(unreachable.stderr, /cannot reach svc at http:\/\/127\.0\.0\.1:1/);
    assert.equal(settings.code, 0, settings.stderr);
    JSON.parse(settings.stdout);
  });

  test('svc serve takes --data-dir before it too, and refuses the admin options it has no use for', async (t) => {
    const dataDir = tempDir(t);
    // This test process is alive: the lock makes it the directory's owner, so serve stops at once, naming it.
    writeFileSync(join(dataDir, 'svc.lock'), JSON.stringify({ pid: process.pid, socketPath: null, startedAt: Date.now() }));
    const held = await runSvc(['-d', dataDir, 'serve', '--port', '0']);
    assert.equal(held.code, 1, held.stderr);
    assert.match(held.stderr, new RegExp(`in use by process ${process.pid}`));
    const empty = tempDir(t);
    for (const [flag, value] of [['--url', 'http://127.0.0.1:1'], ['--api-key', 'svc_x'], ['--json']] as const) {
      const result = await runSvc([flag, ...(value === undefined ? [] : [value]), 'serve', '--port', '0', '--data-dir', empty]);
      assert.equal(result.code, 2, `${flag}: ${result.stderr}`);
      assert.match(result.stderr, new RegExp(`^svc: svc serve does not take ${flag}`, 'm'));
    }
    assert.deepEqual(readdirSync(empty), [], 'refused before the data directory was touched');
  });

  test('svc --help lists the options of every admin command, and says they go before, between a group and its command, or after it', async () => {
    const help = await runSvc(['--help']);
    assert.equal(help.code, 0, help.stderr);
    for (const flag of ['--url <url>', '--api-key <token>', '-d, --data-dir <dir>', '--json']) assert.ok(help.stdout.includes(`  ${flag}`), flag);
    assert.match(help.stdout, /before the command, between a group and its command or after it/);
  });

  test('help for a command svc does not have is an unknown command (exit 2, on stderr), in every form help takes', async () => {
    // `svc help keys nosuch` printed the keys help and exited 0, `svc help nosuch` the root help with no word of why
    // (exit 2), and `svc nosuch --help` the root help, exit 0: a script's typo passed as help.
    const forms = [
      [['help', 'nosuch'], 'nosuch'],
      [['help', 'keys', 'nosuch'], 'nosuch'],
      [['keys', 'help', 'nosuch'], 'nosuch'],
      [['help', 'keys', 'create', 'nosuch'], 'nosuch'],
      [['help', 'serve', 'nosuch'], 'nosuch'],
      [['nosuch', '--help'], 'nosuch'],
      [['keys', 'nosuch', '--help'], 'nosuch'],
      [['--json', 'keys', 'nosuch', '-h'], 'nosuch'],
    ] as const;
    const results = await Promise.all(forms.map(([argv]) => runSvcInProcess([...argv])));
    results.forEach((result, i) => {
      const [argv, name] = forms[i]!;
      assert.equal(result.code, 2, `svc ${argv.join(' ')}: ${result.stdout}`);
      assert.equal(result.stdout, '', argv.join(' '));
      assert.match(result.stderr, new RegExp(`^error: unknown command '${name}'`), argv.join(' '));
    });
    // As the help of a command that exists, which help reaches at any depth.
    const [root, keys, create, helpOfHelp, flag] = await Promise.all([
      runSvcInProcess(['help']),
      runSvcInProcess(['help', 'keys']),
      runSvcInProcess(['help', 'keys', 'create']),
      runSvcInProcess(['help', 'help']),
      runSvcInProcess(['keys', 'create', '--help']),
    ]);
    for (const result of [root, keys, create, helpOfHelp]) assert.equal(result.code, 0, result.stderr);
    assert.match(root.stdout, /^Usage: svc \[options\] \[command\]/);
    assert.match(keys.stdout, /^Usage: svc keys \[options\] \[command\]/);
    assert.equal(create.stdout, flag.stdout, 'svc help keys create is svc keys create --help');
    assert.match(helpOfHelp.stdout, /^Usage: svc help/);
  });

  test("help for a mistyped command gives commander's own error for it, its suggestion included, at every level", async () => {
    // `svc help kyes` and `svc help keys lst` said the command was unknown but not, as `svc kyes` did, which was meant.
    const typos = [
      [['kyes'], ['help', 'kyes'], ['kyes', '--help']],
      [['keys', 'lst'], ['help', 'keys', 'lst'], ['keys', 'help', 'lst'], ['keys', 'lst', '--help']],
    ] as const;
    for (const [typed, ...helps] of typos) {
      const [expected, ...results] = await Promise.all([typed, ...helps].map((argv) => runSvcInProcess([...argv])));
      assert.equal(expected!.code, 2);
      assert.match(expected!.stderr, /^\(Did you mean (keys|list)\?\)$/m, typed.join(' '));
      results.forEach((result, i) => {
        assert.equal(result.code, 2, helps[i]!.join(' '));
        assert.equal(result.stderr, expected!.stderr, `svc ${helps[i]!.join(' ')} is svc ${typed.join(' ')}`);
      });
    }
  });

  test('--help after more arguments than a command takes is the usage error the line gives without it', async () => {
    // `svc serve nosuch --help` printed serve's help and exited 0, where `svc serve nosuch` and `svc keys nosuch
    // --help` are usage errors (exit 2).
    // -h is --help's short name, one option to commander: tried on a line of each bundle (serve's and the admin one's),
    // through bin/svc; the other lines in-process.
    const lines = [['serve', 'nosuch'], ['audit', 'nosuch'], ['keys', 'list', 'nosuch'], ['keys', 'revoke', 'key_a', 'key_b']];
    const withShortHelp = [lines[0], lines[3]];
    for (const line of lines) {
      const forms = [line, [...line, '--help'], ...(withShortHelp.includes(line) ? [[...line, '-h']] : [])];
      const run = withShortHelp.includes(line) ? runSvc : runSvcInProcess;
      const [without, ...helps] = await Promise.all(forms.map((argv) => run(argv)));
      assert.equal(without!.code, 2, line.join(' '));
      assert.match(without!.stderr, /^error: too many arguments for '\w+'\. Expected \d argument/, line.join(' '));
      for (const help of helps) {
        assert.equal(help.code, 2, `${line.join(' ')} --help: ${help.stdout}`);
        assert.equal(help.stdout, '');
        assert.equal(help.stderr, without!.stderr, `${line.join(' ')} --help`);
      }
    }
    // As many as it takes, or fewer: its help (serve's from its bundle, through bin/svc).
    for (const argv of [['serve', '--help'], ['keys', 'revoke', 'key_a', '--help'], ['keys', 'revoke', '--help']]) {
      const help = await (argv[0] === 'serve' ? runSvc : runSvcInProcess)(argv);
      assert.equal(help.code, 0, `${argv.join(' ')}: ${help.stderr}`);
      assert.match(help.stdout, /^Usage: svc /);
    }
  });

  test('the options svc takes anywhere on the line are taken after help and ignored, as after --help', async (t) => {
    // `svc help keys --json` was an unknown option (exit 2) where `svc keys --help --json` and `svc --json help keys`
    // print the keys help.
    const empty = tempDir(t);
    const options = ['--json', '--url', 'http://127.0.0.1:9', '--api-key', 'k', '--data-dir', empty];
    const forms = [
      [['help', 'keys', ...options], ['keys', '--help', ...options]],
      [['help', ...options, 'keys', 'list'], ['keys', 'list', '--help']],
      [['keys', 'help', 'create', '--json'], ['keys', 'create', '--help', '--json']],
    ] as const;
    for (const [viaHelp, viaFlag] of forms) {
      const [help, flag] = await Promise.all([runSvcInProcess([...viaHelp]), runSvcInProcess([...viaFlag])]);
      assert.equal(flag.code, 0, `${viaFlag.join(' ')}: ${flag.stderr}`);
      assert.equal(help.code, 0, `${viaHelp.join(' ')}: ${help.stderr}`);
      assert.equal(help.stdout, flag.stdout, `svc ${viaHelp.join(' ')} is svc ${viaFlag.join(' ')}`);
    }
    assert.deepEqual(readdirSync(empty), [], 'help touched no data directory');
    // Help's own help does not list them, which do nothing there.
    const helpOfHelp = await runSvcInProcess(['help', '--help']);
    assert.equal(helpOfHelp.code, 0, helpOfHelp.stderr);
    assert.doesNotMatch(helpOfHelp.stdout, /--json|--url/);
  });

  test('-d=DIR is a usage error, not a data directory named "=DIR" made in the working directory', async (t) => {
    const [cwd, dataDir] = [tempDir(t), tempDir(t)];
    // A short option's value follows it as is (getopt's way): -d=DIR gives "=DIR", a relative path.
    for (const argv of [['keys', 'list', `-d=${dataDir}`], [`-d=${dataDir}`, 'keys', 'list'], ['serve', '--port', '0', `-d=${dataDir}`]]) {
      const result = await runSvc(argv, { cwd });
      assert.equal(result.code, 2, `${argv.join(' ')}: ${result.stdout}${result.stderr}`);
      assert.match(result.stderr, /must not start with "="/);
    }
    assert.deepEqual(readdirSync(cwd), [], 'nothing made in the working directory');
    const spelled = await runSvc(['keys', 'list', '--json', `--data-dir=${dataDir}`], { cwd });
    assert.equal(spelled.code, 0, `--data-dir=DIR is the long option's form: ${spelled.stderr}`);
  });
});
