/**
 * The request-template fingerprint: what makes two requests "the same workload" for attribution, whatever the user
 * turn says: the wire, the model, the system text (system/developer messages, `system`, `instructions`) and the
 * names of the declared tools. Exact repeats are the cache key's business (cache-controls.ts); this groups the
 * traffic an operator recognises as one feature of an app (docs/evidence.md).
 */
import { canonicalJson } from '../core/canonical-json.ts';
import { sha256Hex } from '../core/ids.ts';
import type { Wire } from './providers/types.ts';

function systemText(wire: Wire, body: Record<string, unknown>): unknown {
  if (wire === 'messages') return body.system ?? null;
  if (wire === 'responses') return body.instructions ?? null;
  const messages = Array.isArray(body.messages) ? (body.messages as Array<Record<string, unknown>>) : [];
  return messages.filter((message) => message?.role === 'system' || message?.role === 'developer').map((message) => message.content);
}

function toolNames(body: Record<string, unknown>): string[] {
  if (!Array.isArray(body.tools)) return [];
  return (body.tools as Array<Record<string, unknown>>)
    .map((tool) => {
      const fn = tool?.function as Record<string, unknown> | undefined;
      return String(fn?.name ?? tool?.name ?? tool?.type ?? '');
    })
    .sort();
}

export function requestFingerprint(wire: Wire, model: string, body: Record<string, unknown>): string {
  return `fp_${sha256Hex(canonicalJson({ wire, model, system: systemText(wire, body), tools: toolNames(body) })).slice(0, 24)}`;
}
