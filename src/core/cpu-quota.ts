/**
 * The CPU quota of this process's control group (a container's `--cpus`, a Kubernetes CPU limit), in CPUs, or null
 * when none is set. Node 20 does not report it (`os.availableParallelism()` counts the CPUs the process may run on,
 * not how much of them it may use).
 *
 * cgroup v2: `cpu.max` ("<quota> <period>", or "max <period>") of the process's group and of each group above it,
 * the smallest applying. cgroup v1: `cpu.cfs_quota_us` (-1: none) over `cpu.cfs_period_us` in the `cpu` hierarchy,
 * likewise. The group comes from `/proc/self/cgroup`; inside a container whose cgroup namespace makes it "/", the
 * files at the mount's root are the container's own.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** Where the files are read from (tests point these elsewhere). */
export interface CgroupFiles {
  /** Contents of /proc/self/cgroup. */
  selfCgroup: string;
  /** Mount point of the cgroup file system: /sys/fs/cgroup. */
  root: string;
}

function readOrNull(path: string): string | null {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return null;
  }
}

/** The group's directory and each directory above it, up to the hierarchy's mount point. */
function groupAndAncestors(mount: string, group: string): string[] {
  const parts = group.split('/').filter(Boolean);
  const dirs: string[] = [];
  for (let depth = parts.length; depth >= 0; depth--) dirs.push(join(mount, ...parts.slice(0, depth)));
  return dirs;
}

function smallest(quotas: Array<number | null>): number | null {
  const set = quotas.filter((quota): quota is number => quota !== null);
  return set.length === 0 ? null : Math.min(...set);
}

/** cgroup v2's `cpu.max`: quota over period in CPUs, or null for "max" or an unreadable file. */
function v2Quota(dir: string): number | null {
  const fields = readOrNull(join(dir, 'cpu.max'))?.split(/\s+/);
  if (!fields || fields[0] === 'max') return null;
  const quota = Number(fields[0]);
  const period = Number(fields[1] ?? 100_000);
  return quota > 0 && period > 0 ? quota / period : null;
}

/** cgroup v1's CFS quota over period in CPUs, or null for -1 (none) or unreadable files. */
function v1Quota(dir: string): number | null {
  const quota = Number(readOrNull(join(dir, 'cpu.cfs_quota_us')) ?? -1);
  const period = Number(readOrNull(join(dir, 'cpu.cfs_period_us')) ?? 0);
  return quota > 0 && period > 0 ? quota / period : null;
}

export function cpuQuota(files: CgroupFiles = { selfCgroup: readOrNull('/proc/self/cgroup') ?? '', root: '/sys/fs/cgroup' }): number | null {
  const quotas: Array<number | null> = [];
  for (const line of files.selfCgroup.split('\n')) {
    // "<id>:<controllers>:<path>"; the path may itself contain colons.
    const match = /^(\d+):([^:]*):(.*)$/.exec(line.trim());
    if (!match) continue;
    const [, , controllers, group] = match;
    if (controllers === '') {
      // cgroup v2 (the unified hierarchy), mounted at the root or, beside v1 controllers, at root/unified.
      for (const mount of [files.root, join(files.root, 'unified')]) {
        quotas.push(smallest(groupAndAncestors(mount, group!).map(v2Quota)));
      }
    } else if (controllers!.split(',').includes('cpu')) {
      // Mounted under the line's own controller list, or under either usual name of the cpu hierarchy (each read once).
      for (const mount of new Set([join(files.root, controllers!), join(files.root, 'cpu'), join(files.root, 'cpu,cpuacct')])) {
        quotas.push(smallest(groupAndAncestors(mount, group!).map(v1Quota)));
      }
    }
  }
  return smallest(quotas);
}
