/**
 * The rules of run feedback (SPEC 4.9). Ratings: `{type:'rating', rating, correction?}`; the reference client sends
 * 5 for thumbs up and -1 for thumbs down, so ratings are numbers from -1 to 5. Metrics events:
 * `{metrics, optimize, tags?, source, evaluator?}` whose leaves are a boolean, a finite number, a string, or
 * `{score, reason?}`; nested objects are namespaces, flattened to dotted names in sorted order. Rejected with 400:
 * arrays, cycles, dotted keys that collide with a namespace path (ambiguous), unsafe or malformed keys, names of
 * more than METRIC_MAX_DEPTH segments (nesting and dotted keys count alike), too many leaves, and events larger than
 * FEEDBACK_EVENT_MAX_BYTES. Feedback is evidence only: it changes no routing.
 */
import { z } from 'zod';
import { invalid } from '../core/errors.ts';

export const FEEDBACK_EVENT_MAX_BYTES = 64 * 1024;
export const METRIC_MAX_DEPTH = 8;
export const METRIC_MAX_LEAVES = 256;
const STRING_LEAF_MAX = 2000;
/** Segment of a metric name; dots are separators, never part of a segment after flattening. */
const KEY = /^[A-Za-z0-9_\-:/]{1,64}$/;
const UNSAFE_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

export const ratingBody = z.strictObject({
  type: z.literal('rating'),
  rating: z.number().finite().min(-1).max(5),
  correction: z.string().trim().min(1).max(32_000).optional(),
});

export type MetricLeaf =
  | { name: string; kind: 'boolean'; value: boolean }
  | { name: string; kind: 'number'; value: number }
  | { name: string; kind: 'string'; value: string }
  | { name: string; kind: 'score'; value: number; reason: string | null };

const metadataValue = z.union([z.string().max(500), z.number().finite(), z.boolean()]);
const metadata = z
  .record(z.string().regex(KEY, 'metadata keys are 1-64 letters, digits, _ - : /'), metadataValue)
  .refine((value) => Object.keys(value).length <= 32, 'at most 32 metadata entries')
  .refine((value) => Object.keys(value).every((key) => !UNSAFE_KEYS.has(key)), 'unsafe metadata key');

export const metricsBody = z.strictObject({
  metrics: z.record(z.string(), z.unknown()),
  optimize: z.enum(['max', 'min']),
  tags: metadata.optional(),
  source: z.string().trim().min(1).max(100),
  evaluator: z.union([z.string().trim().min(1).max(200), metadata]).optional(),
});

export interface MetricsFeedback {
  metrics: MetricLeaf[];
  optimize: 'max' | 'min';
  tags: Record<string, string | number | boolean>;
  source: string;
  evaluator: string | Record<string, string | number | boolean> | null;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && Object.getPrototypeOf(value) === Object.prototype;
}

function isScoreLeaf(value: Record<string, unknown>): boolean {
  const keys = Object.keys(value);
  return 'score' in value && keys.every((key) => key === 'score' || key === 'reason');
}

/** Flatten nested metric namespaces into sorted dotted leaves, enforcing every rule above. */
export function flattenMetrics(metrics: Record<string, unknown>): MetricLeaf[] {
  const leaves: MetricLeaf[] = [];
  const seen = new Set<string>();
  const ancestors = new Set<object>();

  const namespace = (value: Record<string, unknown>, path: string[]) => {
    const name = path.join('.');
    if (ancestors.has(value)) throw invalid(`Metric ${name} refers to itself (cycle).`);
    const keys = Object.keys(value).sort();
    if (keys.length === 0) throw invalid(`Metric namespace ${name || '(root)'} is empty.`);
    ancestors.add(value);
    for (const key of keys) {
      if (UNSAFE_KEYS.has(key)) throw invalid(`Metric key ${JSON.stringify(key)} is not allowed.`);
      const segments = key.split('.');
      if (!segments.every((segment) => KEY.test(segment))) {
        throw invalid(`Metric key ${JSON.stringify(key)} is malformed: segments are 1-64 letters, digits, _ - : / separated by single dots.`);
      }
      // Depth is counted in name segments, so `{"a.b.c": 1}` is as deep as `{a: {b: {c: 1}}}`: both flatten to the
      // same name, and a dotted key must not reach depths nesting cannot. Each level adds a segment, so this also
      // bounds the walk.
      const childPath = [...path, ...segments];
      if (childPath.length > METRIC_MAX_DEPTH) {
        throw invalid(`Metrics nest deeper than ${METRIC_MAX_DEPTH} levels at ${childPath.slice(0, METRIC_MAX_DEPTH + 1).join('.')}.`);
      }
      member(value[key], childPath);
    }
    ancestors.delete(value);
  };

  const member = (value: unknown, path: string[]) => {
    const name = path.join('.');
    if (Array.isArray(value)) throw invalid(`Metric ${name} is an array; metric values are boolean, number, string or {score, reason}.`);
    if (isPlainObject(value) && !isScoreLeaf(value)) return namespace(value, path);
    if (seen.has(name) || [...seen].some((other) => other.startsWith(`${name}.`) || name.startsWith(`${other}.`))) {
      throw invalid(`Metric name ${name} is ambiguous: a dotted key collides with a nested namespace.`);
    }
    seen.add(name);
    if (leaves.length >= METRIC_MAX_LEAVES) throw invalid(`At most ${METRIC_MAX_LEAVES} metrics per event.`);
    leaves.push(leafOf(name, value));
  };

  // The top level is always the namespace of metric names, never a leaf: `{score: 5}` is a metric named `score`,
  // where a `{score, reason}` test on it made one leaf with the empty name.
  namespace(metrics, []);
  return leaves.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** One named metric value: boolean, finite number, string, or `{score, reason?}`. */
function leafOf(name: string, value: unknown): MetricLeaf {
  if (typeof value === 'boolean') return { name, kind: 'boolean', value };
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw invalid(`Metric ${name} is not a finite number.`);
    return { name, kind: 'number', value };
  }
  if (typeof value === 'string') {
    if (value.length > STRING_LEAF_MAX) throw invalid(`Metric ${name} is longer than ${STRING_LEAF_MAX} characters.`);
    return { name, kind: 'string', value };
  }
  if (isPlainObject(value)) {
    const { score, reason } = value;
    if (typeof score !== 'number' || !Number.isFinite(score)) throw invalid(`Metric ${name}.score must be a finite number.`);
    if (reason !== undefined && (typeof reason !== 'string' || reason.length > STRING_LEAF_MAX)) {
      throw invalid(`Metric ${name}.reason must be a string of at most ${STRING_LEAF_MAX} characters.`);
    }
    return { name, kind: 'score', value: score, reason: reason ?? null };
  }
  throw invalid(`Metric ${name} must be a boolean, a finite number, a string or {score, reason}.`);
}

/** Validate a metrics event: size first (before any walk), then shape, then the leaves. */
export function parseMetricsFeedback(body: unknown): MetricsFeedback {
  let size: number;
  try {
    size = Buffer.byteLength(JSON.stringify(body) ?? '');
  } catch {
    throw invalid('The metrics event is not plain JSON (cycle).');
  }
  if (size > FEEDBACK_EVENT_MAX_BYTES) throw invalid(`The metrics event is larger than ${FEEDBACK_EVENT_MAX_BYTES} bytes.`);
  const parsed = metricsBody.parse(body);
  return {
    metrics: flattenMetrics(parsed.metrics),
    optimize: parsed.optimize,
    tags: parsed.tags ?? {},
    source: parsed.source,
    evaluator: parsed.evaluator ?? null,
  };
}
