/** The CPU quota of the process's control group, read from cgroup v1 and v2 files laid out in a temporary directory. */
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test, { type TestContext } from 'node:test';
import { cpuQuota } from '../../src/core/cpu-quota.ts';
import { tempDir } from '../support/process.ts';

function cgroupRoot(t: TestContext, files: Record<string, string>): string {
  const root = tempDir(t, 'svc-cgroup-');
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(root, path, '..'), { recursive: true });
    writeFileSync(join(root, path), `${content}\n`);
  }
  return root;
}

test('cgroup v2: cpu.max of the group, or the smallest above it; "max" is none', (t) => {
  const root = cgroupRoot(t, {
    'cpu.max': 'max 100000',
    'kubepods/cpu.max': '400000 100000',
    'kubepods/pod1/cpu.max': 'max 100000',
    'kubepods/pod1/svc/cpu.max': '150000 100000',
    'other/cpu.max': 'max 100000',
  });
  assert.equal(cpuQuota({ selfCgroup: '0::/kubepods/pod1/svc\n', root }), 1.5);
  assert.equal(cpuQuota({ selfCgroup: '0::/kubepods/pod1\n', root }), 4, 'the limit of a group above applies');
  assert.equal(cpuQuota({ selfCgroup: '0::/other\n', root }), null);
  assert.equal(cpuQuota({ selfCgroup: '0::/\n', root }), null);
});

test("cgroup v2 in a container's namespace: the mount's own cpu.max is the container's", (t) => {
  const root = cgroupRoot(t, { 'cpu.max': '50000 100000' });
  assert.equal(cpuQuota({ selfCgroup: '0::/\n', root }), 0.5);
});

test('cgroup v1: the cpu hierarchy\'s CFS quota over its period; -1 is none; other controllers are ignored', (t) => {
  const root = cgroupRoot(t, {
    'cpu,cpuacct/cpu.cfs_quota_us': '-1',
    'cpu,cpuacct/cpu.cfs_period_us': '100000',
    'cpu,cpuacct/docker/abc/cpu.cfs_quota_us': '25000',
    'cpu,cpuacct/docker/abc/cpu.cfs_period_us': '100000',
    'memory/docker/abc/cpu.cfs_quota_us': '1000',
    'memory/docker/abc/cpu.cfs_period_us': '100000',
  });
  const self = ['12:memory:/docker/abc', '4:cpu,cpuacct:/docker/abc', '1:name=systemd:/docker/abc'].join('\n');
  assert.equal(cpuQuota({ selfCgroup: self, root }), 0.25);
  assert.equal(cpuQuota({ selfCgroup: '4:cpu,cpuacct:/\n', root }), null);
});

test('no readable files, or no cgroup at all: no quota', (t) => {
  const root = cgroupRoot(t, {});
  assert.equal(cpuQuota({ selfCgroup: '0::/svc\n4:cpu:/svc\n', root }), null);
  assert.equal(cpuQuota({ selfCgroup: '', root }), null);
  assert.equal(typeof cpuQuota() === 'number' || cpuQuota() === null, true, 'this machine is read without throwing');
});
