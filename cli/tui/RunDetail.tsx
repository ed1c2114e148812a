/**
 * The run detail screen: the run's headline with its integrity badge, the route explanation (route, reason,
 * rejected alternatives, cache decisions, fallback, execution method), economics, side effects, and one page of
 * the trace timeline. A pure view: everything arrives as props.
 */
import { Box, Text } from 'ink';
import type { ReactNode } from 'react';
import { padEndColumns } from '../terminal-width.ts';
import { clip, formatClock, formatTime, formatUsd, summarizePayload } from './format.ts';
import type { EconomicsView, EventPage, IntegrityView, RouteExplanationView, RunView, SideEffectView, TokensView } from './run-answers.ts';

export interface RunDetailProps {
  runId: string;
  run: RunView | null;
  sideEffects: SideEffectView[];
  /** The run's side effects in all (`sideEffects` may be the newest of them). */
  sideEffectTotal: number;
  events: EventPage | null;
  /** 1 for the newest page of events, 2 for the one before it... */
  pageNumber: number;
  integrity: IntegrityView | null;
  economics: EconomicsView | null;
  loading: boolean;
  error: string | null;
  message: string | null;
  /** Terminal width, to cut long lines. */
  width: number;
  /** A short terminal: no blank lines between the sections and the first two side effects only (20 lines and the trace). */
  compact?: boolean;
  color: boolean;
}

/**
 * The integrity badge: the chain recomputed over the run's events, or where it breaks. `unread` when the run could not
 * be read (svc down, an error answer): no chain is being checked then, and the error line says why.
 */
export function integrityBadge(integrity: IntegrityView | null, unread = false): string {
  if (!integrity) return unread ? 'chain not checked' : '… checking chain';
  if (integrity.ok) return `✓ chain verified (${integrity.eventCount ?? '?'} events)`;
  const reason = integrity.reason ? `: ${integrity.reason}` : '';
  // svc names the seq where a chain breaks; an answer that names none (not svc's) is no verdict either way.
  return integrity.brokenAt === null ? `✗ not verified${reason}` : `✗ broken at seq ${integrity.brokenAt}${reason}`;
}

/** A number of the answer as shown: `-` when it gave none. */
const count = (value: number | null) => (value === null ? '-' : String(value));

const tokens = (usage: TokensView | null) =>
  usage ? `${count(usage.promptTokens)} in / ${count(usage.completionTokens)} out (${count(usage.totalTokens)})` : '-';

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

function RouteSection({ explanation }: { explanation: RouteExplanationView | null }) {
  if (!explanation) return <Text dimColor>no route explanation yet (the run has not been routed)</Text>;
  const rejected = explanation.rejectedAlternatives;
  const cache = explanation.cache;
  const fallback = explanation.fallback;
  return (
    <>
      <Text wrap="truncate-end">
        route {explanation.route ?? '-'}: {explanation.reason ?? '-'}
      </Text>
      <Text wrap="truncate-end">
        rejected: {rejected.length ? rejected.map((alternative) => `${alternative.route ?? '-'} (${alternative.reason ?? '-'})`).join('; ') : 'none'}
      </Text>
      <Text wrap="truncate-end">
        cache:{' '}
        {cache.length
          ? cache
              .map((decision) =>
                [
                  `${decision.cacheType ?? '-'} lookup=${decision.lookup ?? '-'}`,
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
      <Text wrap="truncate-end">fallback: {fallback ? `${fallback.from ?? '-'} → ${fallback.to ?? '-'} (${fallback.reason ?? '-'})` : 'none'}</Text>
      <Text wrap="truncate-end">
        policy: {explanation.policyVerdict?.decision ?? '-'}
        {explanation.policyVerdict?.policy ? ` (${explanation.policyVerdict.policy})` : ''} · execution method:{' '}
        {explanation.executionMethod ? `${explanation.executionMethod.id ?? '-'} (${explanation.executionMethod.referenceGrade ?? '-'})` : '-'}
      </Text>
    </>
  );
}

function EconomicsSection({ economics }: { economics: EconomicsView | null }) {
  if (!economics) return <Text dimColor>…</Text>;
  const ratio = economics.marginRatio;
  return (
    <>
      <Text wrap="truncate-end">
        provider cost {formatUsd(economics.providerUsd)} · optimizer {formatUsd(economics.optimizerUsd)} · reference cost{' '}
        {formatUsd(economics.referenceUsd)} ({economics.referenceSource ?? '-'}){economics.priced ? '' : ' · unpriced model'}
      </Text>
      <Text wrap="truncate-end">
        savings {formatUsd(economics.savingsUsd)}
        {economics.ghostUsd ? ` (ghost ${formatUsd(economics.ghostUsd)})` : ''} · {count(economics.savedMs)} ms saved · margin{' '}
        {ratio === null ? '-' : `${(ratio * 100).toFixed(1)}%`}
      </Text>
      <Text wrap="truncate-end">
        tokens actual {tokens(economics.tokensActual)} · customer {tokens(economics.tokensCustomer)}
      </Text>
    </>
  );
}

function SideEffectsSection({ sideEffects, total, shownAtMost }: { sideEffects: SideEffectView[]; total: number; shownAtMost: number }) {
  if (sideEffects.length === 0) return <Text dimColor>none recorded</Text>;
  // The newest: svc answers the newest of a run's side effects, so the oldest of those would be an arbitrary middle.
  const shown = sideEffects.slice(-shownAtMost);
  return (
    <>
      {shown.map((effect, i) => (
        <Text key={i} wrap="truncate-end">
          {effect.toolName ?? '-'} · level {effect.level ?? '-'} · {effect.state ?? '-'} · idempotencyKey {effect.idempotencyKey ?? '-'}
          {effect.reason ? ` · ${effect.reason}` : ''}
        </Text>
      ))}
      {total > shown.length ? <Text dimColor>+{total - shown.length} more (in the evidence packet)</Text> : null}
    </>
  );
}

function Timeline({ events, width }: { events: EventPage | null; width: number }) {
  if (!events) return <Text dimColor>…</Text>;
  if (events.events.length === 0) return <Text dimColor>no events</Text>;
  return (
    <>
      {events.events.map((event, i) => (
        <Text key={`${i}:${event.seq}`} wrap="truncate-end">
          {clip(`#${String(event.seq ?? '?').padEnd(4)} ${event.createdAt === null ? '-' : formatClock(event.createdAt)}  ${padEndColumns(event.type ?? '-', 24)} ${summarizePayload(event.payload)}`, Math.max(20, width - 4))}
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
  const range = events === null ? '…' : events.events.length === 0 ? 'none' : `#${first ?? '?'}-#${last ?? '?'} of ${run?.eventCount ?? '?'}`;
  // Its last read failed before any answer: it is not loading, nor its chain being checked (svc stopped, an error).
  const unread = run === null && props.error !== null && !props.loading;
  return (
    <Box flexDirection="column">
      {/* One text, not a row of them: on a narrow terminal it wraps as words instead of as columns cut into each other. */}
      <Text>
        <Text bold>run {props.runId}</Text> · <Text {...badgeColor}>{integrityBadge(integrity, unread)}</Text>
        {props.loading ? <Text dimColor> …</Text> : null}
      </Text>
      {run ? (
        <Text wrap="truncate-end">
          {run.status ?? '-'} · {run.route ?? '-'} · {run.model ?? '-'}
          {run.provider ? ` via ${run.provider}` : ''} · {run.wire ?? '-'} · {run.mode ?? '-'} · {run.latencyMs ?? '-'} ms · created {formatTime(run.createdAt)} UTC
          {run.error ? ` · error ${run.error.kind ?? '-'}: ${run.error.message ?? '-'}` : ''}
        </Text>
      ) : (
        <Text dimColor>{unread ? 'the run could not be read (the error below says why)' : 'loading…'}</Text>
      )}
      {/* Until the run is read (or when it cannot be), its sections say nothing of it: not "not routed", not "none". */}
      <Section title="Route explanation" compact={compact}>
        {run ? <RouteSection explanation={run.routeExplanation} /> : <Text dimColor>…</Text>}
      </Section>
      <Section title="Economics (USD)" compact={compact}>
        <EconomicsSection economics={props.economics} />
      </Section>
      <Section title={run ? `Side effects (${props.sideEffectTotal})` : 'Side effects'} compact={compact}>
        {run ? <SideEffectsSection sideEffects={props.sideEffects} total={props.sideEffectTotal} shownAtMost={compact ? 2 : 5} /> : <Text dimColor>…</Text>}
      </Section>
      <Section title={`Trace timeline · events ${range} · page ${props.pageNumber}${props.pageNumber === 1 ? ' (newest)' : ''}`} compact={compact}>
        <Timeline events={events} width={props.width} />
      </Section>
      <Box flexDirection="column" marginTop={compact ? 0 : 1}>
        {props.error ? <Text {...(props.color ? { color: 'red' } : {})}>error: {props.error}</Text> : null}
        {props.message ? <Text>{props.message}</Text> : null}
        <Text dimColor wrap="truncate-end">
          n/] older events · p/[ newer events · e export evidence packet · q/Esc/← back to the list
        </Text>
      </Box>
    </Box>
  );
}
