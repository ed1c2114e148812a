/**
 * The run detail screen: the run's headline with its integrity badge, the route explanation (route, reason,
 * rejected alternatives, cache decisions, fallback, execution method), economics, side effects, and one page of
 * the trace timeline. A pure view: everything arrives as props.
 */
import { Box, Text } from 'ink';
import type { ReactNode } from 'react';
import type { RunIntegrity, RunSummary } from '../../src/client/client.ts';
import { clip, formatClock, formatTime, formatUsd, summarizePayload } from './format.ts';
import type { EventPage, SideEffectView } from './runs-source.ts';

export interface RunDetailProps {
  runId: string;
  run: RunSummary | null;
  sideEffects: SideEffectView[];
  events: EventPage | null;
  /** 1 for the newest page of events, 2 for the one before it... */
  pageNumber: number;
  integrity: RunIntegrity | null;
  economics: Record<string, any> | null;
  loading: boolean;
  error: string | null;
  message: string | null;
  /** Terminal width, to cut long lines. */
  width: number;
  /** A short terminal: no blank lines between the sections and the first two side effects only (20 lines and the trace). */
  compact?: boolean;
  color: boolean;
}

/** The integrity badge: the chain recomputed over the run's events, or where it breaks. */
export function integrityBadge(integrity: RunIntegrity | null): string {
  if (!integrity) return '… checking chain';
  if (integrity.ok) return `✓ chain verified (${integrity.eventCount} events)`;
  return `✗ broken at seq ${integrity.brokenAt ?? '?'}${integrity.reason ? `: ${integrity.reason}` : ''}`;
}

interface Explanation {
  route?: string;
  reason?: string;
  rejectedAlternatives?: Array<{ route: string; reason: string }>;
  cache?: Array<{ cacheType: string; lookup: string; write?: string; control?: string; sourceRunId?: string }>;
  fallback?: null | { from: string; to: string; reason: string };
  policyVerdict?: { decision: string; policy: string | null; reason: string | null };
  executionMethod?: { id: string; referenceGrade: string };
  provider?: string | null;
}

const tokens = (usage: Record<string, number> | undefined) =>
  usage ? `${usage.promptTokens ?? 0} in / ${usage.completionTokens ?? 0} out (${usage.totalTokens ?? 0})` : '-';

function Section(props: { title: string; compact: boolean; children: ReactNode }) {
  return (
    <Box flexDirection="column" marginTop={props.compact ? 0 : 1}>
      <Text bold underline>
        {props.title}
      </Text>
      <Box flexDirection="column" paddingLeft={2}>
        {props.children}
      </Box>
    </Box>
  );
}

function RouteSection({ explanation }: { explanation: Explanation | null }) {
  if (!explanation) return <Text dimColor>no route explanation yet (the run has not been routed)</Text>;
  const rejected = explanation.rejectedAlternatives ?? [];
  const cache = explanation.cache ?? [];
  const fallback = explanation.fallback;
  return (
    <>
      <Text wrap="truncate-end">
        route {explanation.route ?? '-'}: {explanation.reason ?? '-'}
      </Text>
      <Text wrap="truncate-end">
        rejected: {rejected.length ? rejected.map((alternative) => `${alternative.route} (${alternative.reason})`).join('; ') : 'none'}
      </Text>
      <Text wrap="truncate-end">
        cache:{' '}
        {cache.length
          ? cache
              .map((decision) =>
                [
                  `${decision.cacheType} lookup=${decision.lookup}`,
                  decision.write ? `write=${decision.write}` : '',
                  decision.control ? `by ${decision.control}` : '',
                  decision.sourceRunId ? `from ${decision.sourceRunId}` : '',
                ]
                  .filter(Boolean)
                  .join(' '),
              )
              .join('; ')
          : 'none'}
      </Text>
      <Text wrap="truncate-end">fallback: {fallback ? `${fallback.from} → ${fallback.to} (${fallback.reason})` : 'none'}</Text>
      <Text wrap="truncate-end">
        policy: {explanation.policyVerdict?.decision ?? '-'}
        {explanation.policyVerdict?.policy ? ` (${explanation.policyVerdict.policy})` : ''} · execution method:{' '}
        {explanation.executionMethod ? `${explanation.executionMethod.id} (${explanation.executionMethod.referenceGrade})` : '-'}
      </Text>
    </>
  );
}

function EconomicsSection({ economics }: { economics: Record<string, any> | null }) {
  if (!economics) return <Text dimColor>…</Text>;
  const cost = economics.cost ?? {};
  const reference = economics.reference ?? {};
  const savings = economics.savings ?? {};
  const ratio = economics.margin?.ratio;
  return (
    <>
      <Text wrap="truncate-end">
        provider cost {formatUsd(cost.providerUsd ?? 0)} · optimizer {formatUsd(cost.optimizerUsd ?? 0)} · reference cost{' '}
        {formatUsd(reference.costUsd ?? 0)} ({reference.source ?? '-'}){economics.priced === false ? ' · unpriced model' : ''}
      </Text>
      <Text wrap="truncate-end">
        savings {formatUsd(savings.usd ?? 0)}
        {savings.ghostUsd ? ` (ghost ${formatUsd(savings.ghostUsd)})` : ''} · {savings.ms ?? 0} ms saved · margin{' '}
        {typeof ratio === 'number' ? `${(ratio * 100).toFixed(1)}%` : '-'}
      </Text>
      <Text wrap="truncate-end">
        tokens actual {tokens(economics.tokens?.actual)} · customer {tokens(economics.tokens?.customer)}
      </Text>
    </>
  );
}

function SideEffectsSection({ sideEffects, shownAtMost }: { sideEffects: SideEffectView[]; shownAtMost: number }) {
  if (sideEffects.length === 0) return <Text dimColor>none recorded</Text>;
  const shown = sideEffects.slice(0, shownAtMost);
  return (
    <>
      {shown.map((effect, i) => (
        <Text key={i} wrap="truncate-end">
          {effect.toolName} · level {effect.level} · {effect.state} · idempotencyKey {effect.idempotencyKey ?? '-'}
          {effect.reason ? ` · ${effect.reason}` : ''}
        </Text>
      ))}
      {sideEffects.length > shown.length ? <Text dimColor>+{sideEffects.length - shown.length} more (in the evidence packet)</Text> : null}
    </>
  );
}

function Timeline({ events, width }: { events: EventPage | null; width: number }) {
  if (!events) return <Text dimColor>…</Text>;
  if (events.events.length === 0) return <Text dimColor>no events</Text>;
  return (
    <>
      {events.events.map((event) => (
        <Text key={event.seq} wrap="truncate-end">
          {clip(`#${String(event.seq).padEnd(4)} ${formatClock(event.createdAt)}  ${event.type.padEnd(24)} ${summarizePayload(event.payload)}`, Math.max(20, width - 4))}
        </Text>
      ))}
    </>
  );
}

export function RunDetail(props: RunDetailProps) {
  const { run, events, integrity } = props;
  const compact = props.compact ?? false;
  const badgeColor = !props.color || !integrity ? {} : { color: integrity.ok ? 'green' : 'red' };
  const first = events?.events[0]?.seq;
  const last = events?.events[events.events.length - 1]?.seq;
  const range = first === undefined ? 'none' : `#${first}-#${last} of ${run?.eventCount ?? '?'}`;
  return (
    <Box flexDirection="column">
      {/* One text, not a row of them: on a narrow terminal it wraps as words instead of as columns cut into each other. */}
      <Text>
        <Text bold>run {props.runId}</Text> · <Text {...badgeColor}>{integrityBadge(integrity)}</Text>
        {props.loading ? <Text dimColor> …</Text> : null}
      </Text>
      {run ? (
        <Text wrap="truncate-end">
          {run.status} · {run.route ?? '-'} · {run.model}
          {run.provider ? ` via ${run.provider}` : ''} · {run.wire} · {run.mode} · {run.latencyMs ?? '-'} ms · created {formatTime(run.createdAt)} UTC
          {run.error ? ` · error ${run.error.kind}: ${run.error.message}` : ''}
        </Text>
      ) : (
        <Text dimColor>loading…</Text>
      )}
      <Section title="Route explanation" compact={compact}>
        <RouteSection explanation={(run?.routeExplanation ?? null) as Explanation | null} />
      </Section>
      <Section title="Economics (USD)" compact={compact}>
        <EconomicsSection economics={props.economics} />
      </Section>
      <Section title={`Side effects (${props.sideEffects.length})`} compact={compact}>
        <SideEffectsSection sideEffects={props.sideEffects} shownAtMost={compact ? 2 : 5} />
      </Section>
      <Section title={`Trace timeline · events ${range} · page ${props.pageNumber}${props.pageNumber === 1 ? ' (newest)' : ''}`} compact={compact}>
        <Timeline events={events} width={props.width} />
      </Section>
      <Box flexDirection="column" marginTop={compact ? 0 : 1}>
        {props.error ? <Text {...(props.color ? { color: 'red' } : {})}>error: {props.error}</Text> : null}
        {props.message ? <Text>{props.message}</Text> : null}
        <Text dimColor wrap="truncate-end">
          n/] older events · p/[ newer events · e export evidence packet · q/Esc back to the list
        </Text>
      </Box>
    </Box>
  );
}
