/**
 * `svc users` and `svc orgs`: usage errors, then the whole flow in-process on a temporary data directory, then against
 * a running `svc serve` over its local socket (and once over --url with the bootstrap token). Passwords travel through
 * stdin (`--password-stdin`); `--temp-password` is used once, to see it works and warns. The hidden prompt and the
 * confirmation are driven in a real terminal (test/support/tmux.ts), skipped when tmux is missing. Most commands run
 * inside the test process (runSvcInProcess: their output and exit code are what they test, svc's notes on stderr
 * included); each command group, and what is a process's (a real stdin, the server's socket from a process of its own,
 * the terminal), also runs as bin/svc.
 */
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import test, { before, describe, type TestContext } from 'node:test';
import { runSvcInProcess } from '../support/in-process-cli.ts';
import { loadScaled } from '../support/load-scaled.ts';
import { ensureBundle, runSvc, startServe, suiteCleanups, tempDir, type RunResult } from '../support/process.ts';
import { skipWithoutTmux, terminal, until } from '../support/tmux.ts';

before(ensureBundle);

// The file's tests (and a flow's stages, one after another, as a group) run at once: each is a run of commands, some
// of them child processes, seconds each on a loaded machine, and the test timeout applies to the whole file under
// node --test.
describe('svc users and svc orgs', { concurrency: true }, () => {
  const jsonOf = (result: RunResult) => {
    assert.equal(result.code, 0, `exit ${result.code}: ${result.stderr}`);
    return JSON.parse(result.stdout);
  };

  const ok = (result: RunResult) => {
    assert.equal(result.code, 0, `exit ${result.code}: ${result.stderr}`);
    return result;
  };

  /** `POST /api/v1/auth/login` from the server's own origin (login is CSRF-checked); the parsed answer. */
  async function login(address: string, email: string, password: string): Promise<{ status: number; body: any; cookie: string | null }> {
    const response = await fetch(`${address}/api/v1/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: address },
      body: JSON.stringify({ email, password }),
    });
    const cookie = response.headers.get('set-cookie')?.split(';')[0] ?? null;
    return { status: response.status, body: await response.json(), cookie };
  }

  /** The accept token from the console e-mail to `email` in `output` (the last one). */
  function inviteToken(output: string, email: string): string {
    const start = output.lastIndexOf(`svc: e-mail to ${email}: `);
    assert.ok(start >= 0, `no e-mail to ${email} in:\n${output}`);
    const match = /accept-invite\?token=([A-Za-z0-9_-]+)/.exec(output.slice(start));
    assert.ok(match, `no accept link in:\n${output.slice(start)}`);
    return match[1]!;
  }

  /** `<command> --help` and flags its help must name. */
  const FLAGS_OF = [
    [['orgs', 'invite'], ['--email', '--role', '--org']],
    [['orgs', 'remove-member'], ['--org', '--yes']],
    [['orgs', 'delete'], ['--org', '--yes']],
    [['users', 'delete'], ['--yes']],
  ] as const;

  test('svc users and svc orgs --help list their commands and flags', async () => {
    const [top, users, create, orgs, ...helps] = await Promise.all(
      [['--help'], ['users', '--help'], ['users', 'create', '--help'], ['orgs', '--help'], ...FLAGS_OF.map(([args]) => [...args, '--help'])].map(async (argv) => ok(await runSvcInProcess(argv))),
    );
    for (const command of ['users', 'orgs']) assert.match(top!.stdout, new RegExp(`^  ${command}\\b`, 'm'));
    for (const command of ['list', 'create', 'delete', 'reset-password']) assert.match(users!.stdout, new RegExp(`\\b${command}\\b`));
    for (const flag of ['--email', '--name', '--role', '--org-role', '--org', '--password-stdin', '--temp-password', '--data-dir', '--url', '--json']) {
      assert.ok(create!.stdout.includes(flag), flag);
    }
    for (const command of ['list', 'create', 'members', 'invite', 'invites', 'revoke-invite', 'set-role', 'remove-member', 'delete']) {
      assert.match(orgs!.stdout, new RegExp(`\\b${command}\\b`), command);
    }
    assert.match(orgs!.stdout, /X-Svc-Tenant/);
    FLAGS_OF.forEach(([args, flags], i) => {
      for (const flag of flags) assert.ok(helps[i]!.stdout.includes(flag), `${args.join(' ')} ${flag}`);
    });
  });

  test('usage errors exit 2 before touching the data directory', async (t) => {
    const args = ['--data-dir', tempDir(t)];
    // `bin`: through bin/svc, for a real stdin (a pipe closed empty, not a terminal) and once per command group.
    const usage = async (argv: string[], pattern: RegExp, options: { input?: string; bin?: boolean } = {}) => {
      const result = await (options.bin ? runSvc : runSvcInProcess)([...argv, ...args], options.input === undefined ? {} : { input: options.input });
      assert.equal(result.code, 2, `${argv.join(' ')}: ${result.stderr}`);
      assert.match(result.stderr, pattern, argv.join(' '));
      assert.equal(result.stdout, '');
    };
    // Each is refused before the data directory is opened, so they cannot disturb each other: run at once.
    await Promise.all([
      usage(['users', 'create'], /required option '--email/),
      usage(['users', 'create', '--email', 'a@example.com', '--role', 'root'], /--role.*must be one of admin, member/),
      usage(['users', 'create', '--email', 'a@example.com', '--org-role', 'boss'], /--org-role.*must be one of owner, admin, member/),
      usage(['users', 'create', '--email', 'a@example.com', '--password-stdin', '--temp-password', 'x'], /not both/, { input: 'y\n' }),
      usage(['users', 'create', '--email', 'a@example.com', '--password-stdin'], /stdin held no password/, { input: '', bin: true }),
      usage(['users', 'create', '--email', 'a@example.com', '--temp-password', ''], /--temp-password.*must not be empty/),
      usage(['users', 'delete'], /missing required argument 'user'/),
      usage(['users', 'delete', 'a@example.com'], /Refusing without a terminal.*--yes/),
      usage(['users', 'list', '--limit', 'many'], /--limit/),
      usage(['orgs', 'create', '--name', 'Acme'], /required option '--owner/),
      usage(['orgs', 'invite', '--email', 'b@example.com', '--role', 'god'], /--role.*must be one of/),
      usage(['orgs', 'invites', '--status', 'lost'], /--status.*must be one of pending, accepted, revoked, expired/),
      usage(['orgs', 'set-role', 'b@example.com', 'king'], /must be one of owner, admin, member/),
      usage(['orgs', 'remove-member', 'b@example.com', '--org', 'org_x'], /Refusing without a terminal.*--yes/),
      usage(['orgs', 'delete'], /required option '--org/),
      usage(['orgs', 'delete', '--org', 'org_x'], /Refusing without a terminal.*--yes/, { bin: true }),
      usage(['users', 'list', '--api-key', 'svc_x'], /--api-key needs --url/),
      // An empty value (a script's unset variable) is refused, not read as the option left out: an empty --org would
      // act in the default organization, an empty --email filter would list every user.
      ...[
        ['users', 'list', '--org', ''],
        ['users', 'list', '--email', ' '],
        ['users', 'create', '--email', ''],
        ['users', 'create', '--email', 'a@example.com', '--name', ''],
        ['users', 'create', '--email', 'a@example.com', '--org', ''],
        ['users', 'delete', '', '--yes'],
        ['users', 'reset-password', ''],
        ['orgs', 'members', '--org', ''],
        ['orgs', 'delete', '--org', '', '--yes'],
        ['orgs', 'create', '--name', '', '--owner', 'a@example.com'],
        ['orgs', 'create', '--name', 'Acme', '--owner', ''],
        ['orgs', 'invite', '--email', ''],
        ['orgs', 'revoke-invite', ''],
        ['orgs', 'set-role', '', 'admin'],
        ['orgs', 'remove-member', '', '--yes'],
      ].map((argv) => usage(argv, /must not be empty/)),
      // Ids have a known form: a user is usr_... or an e-mail address (a bare name is neither), an invitation inv_....
      ...[['users', 'delete', 'ada', '--yes'], ['users', 'reset-password', 'ada'], ['orgs', 'set-role', 'ada', 'admin'], ['orgs', 'remove-member', 'ada', '--yes']].map(
        (argv) => usage(argv, /'ada' is invalid.*must be a user id \(usr_\.\.\.\) or an e-mail address/),
      ),
      // The prefix alone is no id (a variable cut short).
      usage(['users', 'reset-password', 'usr_'], /'usr_' is invalid.*must be a user id \(usr_\.\.\.\) or an e-mail address/),
      usage(['orgs', 'revoke-invite', 'abc'], /'abc' is invalid.*must be an invitation id \(inv_\.\.\.\)/),
    ]);
    assert.deepEqual(readdirSync(args[1]!), [], 'the data directory was not touched');
  });

  // Each command here opens the data file, one after another (and the ones through bin/svc start a node): on a loaded
  // machine seconds each. So the flow's stages are tests of their own, on one data directory, each within the test
  // timeout.
  describe('users in-process on one data directory, then a sign-in with the reset password', { concurrency: 1 }, () => {
    const dataDir = tempDir(suiteCleanups());
    const args = ['--data-dir', dataDir];
    let adaId: string;
    let resetPassword: string;

    test('create: from stdin, generated, from argv; a taken e-mail and a short password are refused', async () => {
      // --password-stdin: the first line of stdin; a password the operator gave is not echoed back. Through bin/svc: a
      // process's stdin, left unread after that line, does not keep the command from exiting.
      const ada = jsonOf(await runSvc(['users', 'create', '--email', 'Ada@Example.com', '--name', 'Ada', '--password-stdin', '--json', ...args], { input: 'first-temp-pass-1\nignored\n' }));
      assert.equal(ada.user.email, 'ada@example.com');
      assert.equal(ada.user.mustChangePassword, true);
      assert.equal(ada.tempPassword, 'first-temp-pass-1');
      adaId = ada.user.id;
      const bea = ok(await runSvcInProcess(['users', 'create', '--email', 'bea@example.com', '--password-stdin', ...args], { input: 'bea-temp-pass-22\n' }));
      assert.match(bea.stdout, /^ID\s+EMAIL\s+NAME\s+ROLE\s+VERIFIED\s+MUST-CHANGE\s+ORGS$/m);
      assert.match(bea.stdout, /usr_\S+\s+bea@example\.com\s+.*\bmember\s+false\s+true\b/);
      assert.ok(!bea.stdout.includes('bea-temp-pass-22') && !bea.stderr.includes('bea-temp-pass-22'), 'not echoed');

      // No terminal and no password: svc generates one, printed once.
      const generated = ok(await runSvcInProcess(['users', 'create', '--email', 'gen@example.com', '--org-role', 'admin', ...args]));
      const generatedPassword = /^temporary password: (\S+)$/m.exec(generated.stdout)?.[1];
      assert.ok(generatedPassword && generatedPassword.length >= 8, generated.stdout);
      assert.match(generated.stderr, /not shown again/);

      // --temp-password works and warns that argv is visible.
      const inArgv = ok(await runSvcInProcess(['users', 'create', '--email', 'argv@example.com', '--temp-password', 'argv-temp-pass-3', ...args]));
      assert.match(inArgv.stderr, /visible/);
      assert.ok(!inArgv.stdout.includes('argv-temp-pass-3'));

      const taken = await runSvcInProcess(['users', 'create', '--email', 'ada@example.com', '--password-stdin', ...args], { input: 'another-pass-44\n' });
      assert.equal(taken.code, 1);
      assert.match(taken.stderr, /^svc: POST \/api\/v1\/users: HTTP 409 email_taken: .+$/m);
      const short = await runSvcInProcess(['users', 'create', '--email', 'short@example.com', '--password-stdin', ...args], { input: 'short\n' });
      assert.equal(short.code, 1, 'the API checks the password rules');
    });

    test('list: a table, the JSON, and by e-mail', async () => {
      // list: a table and the API's JSON.
      const table = ok(await runSvcInProcess(['users', 'list', ...args]));
      assert.match(table.stdout, /^ID\s+EMAIL\s+NAME\s+ROLE\s+VERIFIED\s+MUST-CHANGE\s+ORGS$/m);
      assert.match(table.stdout, new RegExp(`^${adaId}\\s+ada@example\\.com\\s+Ada\\s+member\\s+false\\s+true\\s+Default \\(member\\)$`, 'm'));
      assert.match(table.stdout, /gen@example\.com\s+.*Default \(admin\)$/m);
      const listed = jsonOf(await runSvcInProcess(['users', 'list', '--json', ...args]));
      assert.deepEqual(listed.users.map((user: { email: string }) => user.email).sort(), ['ada@example.com', 'argv@example.com', 'bea@example.com', 'gen@example.com']);
      assert.equal(listed.pagination.total, 4);
      assert.ok(!JSON.stringify(listed).includes('pass'), 'no passwords or hashes in the list');
      const one = jsonOf(await runSvcInProcess(['users', 'list', '--email', 'ADA@example.com', '--json', ...args]));
      assert.deepEqual(one.users.map((user: { id: string }) => user.id), [adaId]);
    });

    test('reset-password and delete, each audited', async () => {
      // reset-password by e-mail prints a new temporary password once.
      const reset = ok(await runSvcInProcess(['users', 'reset-password', 'ada@example.com', ...args]));
      const printed = /^temporary password: (\S+)$/m.exec(reset.stdout)?.[1];
      assert.ok(printed && printed !== 'first-temp-pass-1', reset.stdout);
      resetPassword = printed;
      const unknown = await runSvcInProcess(['users', 'reset-password', 'nobody@example.com', ...args]);
      assert.equal(unknown.code, 1);
      assert.match(unknown.stderr, /^svc: no user with e-mail nobody@example\.com$/m);

      // Through bin/svc once: the users group as a process.
      const deletedUser = ok(await runSvc(['users', 'delete', 'bea@example.com', '--yes', ...args]));
      assert.match(deletedUser.stdout, /^deleted user bea@example\.com \(usr_\S+\)$/m);
      assert.equal(jsonOf(await runSvcInProcess(['users', 'delete', 'argv@example.com', '--yes', '--json', ...args])).deleted, true);
      assert.equal(jsonOf(await runSvcInProcess(['users', 'list', '--json', ...args])).pagination.total, 2);

      const audit = jsonOf(await runSvcInProcess(['audit', '--json', '--limit', '100', ...args]));
      const actions = new Set(audit.events.map((event: { action: string }) => event.action));
      for (const action of ['user.create', 'user.reset_password', 'user.delete']) assert.ok(actions.has(action), action);
    });

    test('the password reset by the CLI signs Ada in, and she must change it', async (t) => {
      const server = await startServe(t, dataDir);
      const session = await login(server.address, 'ada@example.com', resetPassword);
      assert.equal(session.status, 200, JSON.stringify(session.body));
      assert.equal(session.body.mustChangePassword, true);
      assert.equal((await login(server.address, 'ada@example.com', 'first-temp-pass-1')).status, 401, 'the old temporary password is gone');
    });
  });

  // The organizations half of the in-process flow, on a data directory of its own, its stages tests of their own too.
  describe('orgs in-process on one data directory: members, invitations, removal and deletion', { concurrency: 1 }, () => {
    const dataDir = tempDir(suiteCleanups());
    const args = ['--data-dir', dataDir];
    let adaId: string;
    let acme: { id: string };

    test('an organization owned by Ada, listed, and a member added with --org', async () => {
      const ada = jsonOf(await runSvcInProcess(['users', 'create', '--email', 'ada@example.com', '--name', 'Ada', '--password-stdin', '--json', ...args], { input: 'first-temp-pass-1\n' }));

      // An organization owned by Ada; members are listed and managed with --org.
      adaId = ada.user.id;
      acme = jsonOf(await runSvcInProcess(['orgs', 'create', '--name', 'Acme', '--owner', 'ada@example.com', '--json', ...args])).org;
      assert.match(acme.id, /^org_/);
      const orgs = ok(await runSvcInProcess(['orgs', 'list', ...args]));
      assert.match(orgs.stdout, /^ID\s+NAME\s+ROLE\s+ACTIVE\s+CREATED$/m);
      assert.match(orgs.stdout, new RegExp(`^${acme.id}\\s+Acme\\b`, 'm'));
      assert.match(orgs.stdout, /^default\s+Default\b/m);
      const noOwner = await runSvcInProcess(['orgs', 'create', '--name', 'Ghost', '--owner', 'ghost@example.com', ...args]);
      assert.equal(noOwner.code, 1);

      ok(await runSvcInProcess(['users', 'create', '--email', 'carol@example.com', '--org', acme.id, '--password-stdin', ...args], { input: 'carol-temp-pass-5\n' }));
      const members = ok(await runSvcInProcess(['orgs', 'members', '--org', acme.id, ...args]));
      assert.match(members.stdout, new RegExp(`^Acme \\(${acme.id}\\)  plan: free  seats: 2 \\(2 members, 0 pending invites\\)$`, 'm'));
      assert.match(members.stdout, /^USER\s+EMAIL\s+NAME\s+ROLE\s+JOINED$/m);
      assert.match(members.stdout, new RegExp(`^${adaId}\\s+ada@example\\.com\\s+Ada\\s+owner\\b`, 'm'));
      assert.match(members.stdout, /carol@example\.com\s+.*\bmember\b/);
      const acmeUsers = jsonOf(await runSvcInProcess(['users', 'list', '--org', acme.id, '--json', ...args]));
      assert.deepEqual(acmeUsers.users.map((user: { email: string; orgRole: string }) => `${user.email}:${user.orgRole}`).sort(), ['ada@example.com:owner', 'carol@example.com:member']);
      assert.match(ok(await runSvcInProcess(['users', 'list', '--org', acme.id, ...args])).stdout, /^ID\s+EMAIL\s+NAME\s+ROLE\s+VERIFIED\s+MUST-CHANGE\s+ORG-ROLE$/m);
    });

    test('invitations: the token never reaches the inviter', async () => {
      const invited = ok(await runSvcInProcess(['orgs', 'invite', '--email', 'dan@example.com', '--role', 'admin', '--org', acme.id, ...args]));
      assert.match(invited.stdout, /^ID\s+EMAIL\s+ROLE\s+STATUS\s+INVITED-BY\s+CREATED\s+EXPIRES$/m);
      assert.match(invited.stdout, /dan@example\.com\s+admin\s+pending\b/);
      assert.match(invited.stderr, /e-mailed to dan@example\.com/);
      // The accept link is in the e-mail, on svc's stderr (the console transport), and never on stdout.
      assert.match(invited.stderr, /^svc: e-mail to dan@example\.com: [^]*\/accept-invite\?token=/m);
      assert.ok(!invited.stdout.includes('accept-invite'), invited.stdout);
      const invites = jsonOf(await runSvcInProcess(['orgs', 'invites', '--org', acme.id, '--status', 'pending', '--json', ...args]));
      assert.equal(invites.invites.length, 1);
      assert.ok(!('token' in invites.invites[0]));
      assert.equal(jsonOf(await runSvcInProcess(['orgs', 'members', '--org', acme.id, '--json', ...args])).seats.pendingInvites, 1);
      const revoked = jsonOf(await runSvcInProcess(['orgs', 'revoke-invite', invites.invites[0].id, '--org', acme.id, '--json', ...args]));
      assert.equal(revoked.invite.status, 'revoked');
      const already = await runSvcInProcess(['orgs', 'invite', '--email', 'carol@example.com', '--org', acme.id, ...args]);
      assert.equal(already.code, 1);
      assert.match(already.stderr, /^svc: POST \/api\/v1\/orgs\/active\/invites: HTTP 409 already_member: /m);
    });

    test('member removal; the last owner stays', async () => {
      const removed = ok(await runSvcInProcess(['orgs', 'remove-member', 'carol@example.com', '--org', acme.id, '--yes', ...args]));
      assert.match(removed.stderr, /^removed carol@example\.com \(usr_\S+\)$/m);
      assert.ok(!removed.stdout.includes('carol@example.com'));
      const lastOwner = await runSvcInProcess(['orgs', 'remove-member', adaId, '--org', acme.id, '--yes', ...args]);
      assert.equal(lastOwner.code, 1);
      assert.match(lastOwner.stderr, /^svc: DELETE \/api\/v1\/orgs\/active\/members\/\S+: HTTP 409 last_owner: .+$/m);
      const deleteOwner = await runSvcInProcess(['users', 'delete', 'ada@example.com', '--yes', ...args]);
      assert.equal(deleteOwner.code, 1);
      assert.match(deleteOwner.stderr, /^svc: \S+ \S+: HTTP 409 last_owner: /m);
      const unknownOrg = await runSvcInProcess(['orgs', 'members', '--org', 'org_doesnotexist', ...args]);
      assert.equal(unknownOrg.code, 1);
      assert.match(unknownOrg.stderr, /^svc: \S+ \S+: HTTP 404 /m);
    });

    test('deleting the organization; the default one cannot be', async () => {
      const defaultOrg = await runSvcInProcess(['orgs', 'delete', '--org', 'default', '--yes', ...args]);
      assert.equal(defaultOrg.code, 1);
      assert.match(defaultOrg.stderr, /^svc: \S+ \S+: HTTP 400 default_org: /m);
      const deletedOrg = ok(await runSvcInProcess(['orgs', 'delete', '--org', acme.id, '--yes', ...args]));
      assert.equal(deletedOrg.stdout, `deleted organization Acme (${acme.id})\n`);
      // The command closes the data file with the organization's purge under way: it is stopped there and resumed by
      // the next start, not cut by the closed file into a failure on stderr.
      assert.equal(deletedOrg.stderr, '');
      assert.ok(!ok(await runSvcInProcess(['orgs', 'list', ...args])).stdout.includes(acme.id));
      // With Acme gone, Ada owns nothing and may be deleted.
      assert.equal(jsonOf(await runSvcInProcess(['users', 'delete', 'ada@example.com', '--yes', '--json', ...args])).deleted, true);
    });
  });

  test('users and orgs through a running svc serve: its socket, e-mails in its output, and --url with the bootstrap token', async (t) => {
    const dataDir = tempDir(t);
    const bootstrap = 'bootstrap-token-for-accounts-cli-01';
    const server = await startServe(t, dataDir, { SVC_API_KEY: bootstrap });
    const args = ['--data-dir', dataDir];

    // The first two through bin/svc, the server's socket reached from a process of its own.
    const ada = jsonOf(await runSvc(['users', 'create', '--email', 'ada@example.com', '--name', 'Ada', '--password-stdin', '--json', ...args], { input: 'socket-temp-pass-1\n' }));
    const session = await login(server.address, 'ada@example.com', 'socket-temp-pass-1');
    assert.equal(session.status, 200, JSON.stringify(session.body));
    assert.equal(session.body.user.id, ada.user.id);
    assert.equal(session.body.mustChangePassword, true);

    const acme = jsonOf(await runSvc(['orgs', 'create', '--name', 'Acme', '--owner', 'ada@example.com', '--json', ...args])).org;
    const invite = jsonOf(await runSvcInProcess(['orgs', 'invite', '--email', 'bob@example.com', '--org', acme.id, '--json', ...args])).invite;
    assert.equal(invite.role, 'member');
    assert.equal(invite.status, 'pending');
    // The console transport wrote the e-mail, with the accept link, to the server's output.
    await waitFor(() => server.output().includes('svc: e-mail to bob@example.com: '));
    const token = inviteToken(server.output(), 'bob@example.com');

    // Bob accepts as a new account, then shows up as a member.
    const accept = await fetch(`${server.address}/api/v1/invites/${token}/accept`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: server.address },
      body: JSON.stringify({ name: 'Bob', password: 'bobs-own-password-1' }),
    });
    assert.equal(accept.status, 200, await accept.clone().text());
    const bobCookie = accept.headers.get('set-cookie')!.split(';')[0]!;
    // Read-only commands through the server, which serves them at once: run together.
    const [membersJson, table] = await Promise.all([runSvcInProcess(['orgs', 'members', '--org', acme.id, '--json', ...args]), runSvcInProcess(['orgs', 'members', '--org', acme.id, ...args])]);
    const members = jsonOf(membersJson);
    assert.deepEqual(members.members.map((member: { email: string; role: string }) => `${member.email}:${member.role}`).sort(), ['ada@example.com:owner', 'bob@example.com:member']);
    assert.match(ok(table).stdout, /bob@example\.com\s+Bob\s+member\b/);

    // Removing Bob ends his session at once.
    assert.equal((await fetch(`${server.address}/api/v1/auth/me`, { headers: { cookie: bobCookie } })).status, 200);
    ok(await runSvcInProcess(['orgs', 'remove-member', 'bob@example.com', '--org', acme.id, '--yes', ...args]));
    assert.equal((await fetch(`${server.address}/api/v1/auth/me`, { headers: { cookie: bobCookie } })).status, 401);

    // Over --url, the bootstrap token is a platform admin too and may pick the organization.
    const url = ['--url', server.address, '--api-key', bootstrap];
    const [viaUrlOrg, viaUrlUsers, denied] = await Promise.all([
      runSvcInProcess(['orgs', 'members', '--org', acme.id, '--json', ...url]),
      runSvcInProcess(['users', 'list', '--json', ...url]),
      runSvcInProcess(['users', 'list', '--url', server.address]),
    ]);
    assert.equal(jsonOf(viaUrlOrg).org.id, acme.id);
    assert.ok(jsonOf(viaUrlUsers).users.some((user: { email: string }) => user.email === 'bob@example.com'));
    assert.equal(denied.code, 1);
    assert.match(denied.stderr, /^svc: GET \/api\/v1\/users\S*: HTTP 401 /m);

    // Bob is no longer Acme's member: deleting him and the organization are independent.
    for (const result of await Promise.all([runSvcInProcess(['orgs', 'delete', '--org', acme.id, '--yes', ...args]), runSvcInProcess(['users', 'delete', 'bob@example.com', '--yes', ...args])])) ok(result);
    const left = jsonOf(await runSvcInProcess(['users', 'list', '--json', ...args])).users.map((user: { email: string }) => user.email);
    assert.deepEqual(left, ['ada@example.com']);
  });

  async function waitFor(condition: () => boolean, timeoutMs = 5_000): Promise<void> {
    const deadline = Date.now() + loadScaled(timeoutMs);
    while (!condition()) {
      if (Date.now() > deadline) throw new Error('timed out waiting');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /** One command in a real terminal (test/support/tmux.ts); the pane stays after it exits, showing `exit=<code>`. */
  function terminalFor(t: TestContext, args: string[]) {
    const pane = terminal(t);
    pane.open(args, { showExit: true });
    return {
      screen: pane.screen,
      type: pane.type,
      enter: () => pane.keys('Enter'),
      keys: pane.keys,
      waitFor: (pattern: RegExp) => until(pane.screen, (text) => pattern.test(text), String(pattern), pane.screen),
    };
  }

  test('on a terminal: a hidden prompt asked twice for the temporary password, and a confirmation before deleting', { skip: skipWithoutTmux }, async (t) => {
    const dataDir = tempDir(t);
    const typed = 'typed-temp-pass-77';
    const create = terminalFor(t, ['users', 'create', '--email', 'tty@example.com', '--data-dir', dataDir]);
    await create.waitFor(/Temporary password for tty@example\.com \(empty: let svc generate one\):/);
    create.type('short');
    create.enter();
    await create.waitFor(/8 to 256 characters/);
    // Clear the rejected answer, then type a good one twice: first a mismatch, which asks again.
    create.keys(...Array<string>('short'.length).fill('BSpace'));
    // Ctrl-T (the library's "toggle visibility") must not show the secret: the whole answer stays masked.
    create.type(typed.slice(0, -1));
    create.keys('C-t');
    create.type(typed.slice(-1));
    await create.waitFor(new RegExp(`\\*{${typed.length}}`));
    assert.ok(!create.screen().includes(typed.slice(0, 8)), `Ctrl-T shows nothing:\n${create.screen()}`);
    create.enter();
    await create.waitFor(/Repeat it:/);
    create.type('something-else-1');
    create.enter();
    await create.waitFor(/did not match; try again/);
    await create.waitFor(/Temporary password for tty@example\.com[^\n]*\n(.|\n)*Temporary password for tty@example\.com/);
    create.type(typed);
    create.enter();
    await create.waitFor(/Repeat it:[^\n]*\n(.|\n)*Repeat it:/);
    create.type(typed);
    create.enter();
    const created = await create.waitFor(/exit=\d+/);
    assert.match(created, /exit=0/);
    assert.match(created, /tty@example\.com/);
    assert.ok(!created.includes(typed), `the password is never shown:\n${created}`);
    assert.match(created, /\*{8,}/, 'masked');

    // The password typed at the prompt is the user's: a server accepts it.
    const server = await startServe(t, dataDir);
    const session = await login(server.address, 'tty@example.com', typed);
    assert.equal(session.status, 200, JSON.stringify(session.body));
    assert.equal(session.body.mustChangePassword, true);

    // Answering no to the confirmation changes nothing; yes deletes.
    const keep = terminalFor(t, ['users', 'delete', 'tty@example.com', '--data-dir', dataDir]);
    await keep.waitFor(/Delete user tty@example\.com \(usr_\S+\)\?/);
    keep.type('n');
    keep.enter();
    const kept = await keep.waitFor(/exit=\d+/);
    assert.match(kept, /Cancelled\./);
    assert.match(kept, /exit=1/);
    const remove = terminalFor(t, ['users', 'delete', 'tty@example.com', '--data-dir', dataDir]);
    await remove.waitFor(/Delete user tty@example\.com/);
    remove.type('y');
    remove.enter();
    const removed = await remove.waitFor(/exit=\d+/);
    assert.match(removed, /deleted user tty@example\.com/);
    assert.match(removed, /exit=0/);
  });

  test('on a terminal, --password-stdin and a secret --value-stdin are refused: stdin would echo what is typed', { skip: skipWithoutTmux }, async (t) => {
    const dataDir = tempDir(t);
    const password = terminalFor(t, ['users', 'create', '--email', 'echo@example.com', '--password-stdin', '--data-dir', dataDir]);
    const refused = await password.waitFor(/exit=\d+/);
    assert.match(refused, /svc: --password-stdin reads a pipe, but stdin is a terminal, which would show the password: leave it out to be asked in a hidden prompt/);
    assert.match(refused, /exit=2/);
    const secret = terminalFor(t, ['settings', 'set', 'webhook_secret', '--value-stdin', '--data-dir', dataDir]);
    const refusedSecret = await secret.waitFor(/exit=\d+/);
    assert.match(refusedSecret, /svc: --value-stdin reads a pipe, but stdin is a terminal, which would show webhook_secret/);
    assert.match(refusedSecret, /exit=2/);
    // Nothing was created or set.
    assert.deepEqual(JSON.parse((await runSvcInProcess(['users', 'list', '--json', '--data-dir', dataDir])).stdout).users, []);
  });
});
