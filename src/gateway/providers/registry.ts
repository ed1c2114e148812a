/**
 * The provider registry: which providers may serve a (wire, model, tenant), in fail-open order.
 *
 * 1. The model id picks a family from `FAMILY_TABLE` (docs/providers.md): `claude*` is the messages family,
 *    everything else (gpt-*, o1/o3/o4*, chatgpt-*, text-embedding-*, unknown ids) the chat-completions family.
 * 2. Candidates of the chat-completions family, in order: the tenant's bring-your-own key (the `TenantKeyLookup` seam;
 *    none until the credential vault lands), the platform key `CHATCOMP_API_KEY` at `CHATCOMP_BASE_URL`, the fallback
 *    upstream `CHATCOMP_FALLBACK_API_KEY` at `CHATCOMP_FALLBACK_BASE_URL`. The caller fails open along this list.
 * 3. The messages family's candidate is the live messages provider (`MESSAGES_API_KEY`), which carries only the
 *    messages wire. The mock serves a family only when no live provider is configured for it. A configured live
 *    family whose providers lack the wire is `unsupported` (never silently served by another wire or by the mock).
 * 4. The governed route `svc/chorus` is not built: no live provider serves it, on any wire. Sent on as the upstream's
 *    model it would carry the prompt, with `local_only`, `blocked_providers` and the customer's `chorus` metadata as
 *    unknown fields, to the very providers those fields keep it from; it is `unsupported` wherever one is configured.
 */
import { createHash } from 'node:crypto';
import type { Dispatcher } from 'undici';
import type { Config } from '../../config.ts';
import { createMessagesProvider } from './messages.ts';
import type { AnswerBudget } from '../answer-budget.ts';
import { createChatCompletionsProvider, createUpstreamAgent, DEFAULT_PROVIDER_TIMEOUTS, type ProviderTimeouts } from './chat-completions.ts';
import { createMockProvider } from './mock.ts';
import { GOVERNED_ROUTE_MODEL } from '../models.ts';
import { noteRequestWrites } from './request-written.ts';
import { ProviderError, type ModelFamily, type Provider, type ProviderRegistry, type ProviderRoute, type TenantKeyLookup, type Wire } from './types.ts';

/** Model-id prefixes of each family; first match wins, anything unmatched is `chat_completions`. */
export const FAMILY_TABLE: ReadonlyArray<{ prefix: string; family: ModelFamily }> = [
  { prefix: 'claude', family: 'messages' },
  { prefix: 'gpt-', family: 'chat_completions' },
  { prefix: 'chatgpt-', family: 'chat_completions' },
  { prefix: 'o1', family: 'chat_completions' },
  { prefix: 'o3', family: 'chat_completions' },
  { prefix: 'o4', family: 'chat_completions' },
  { prefix: 'text-embedding-', family: 'chat_completions' },
];

export function familyOf(model: string): ModelFamily {
  return familyOfId(modelId(model));
}

/** A model as the family table reads it: trimmed, any case. */
function modelId(model: string): string {
  return model.trim().toLowerCase();
}

function familyOfId(id: string): ModelFamily {
  return FAMILY_TABLE.find((entry) => id.startsWith(entry.prefix))?.family ?? 'chat_completions';
}

export const PROVIDER_NAMES = {
  tenant: 'chatcomp-tenant',
  platform: 'chatcomp',
  fallback: 'chatcomp-fallback',
  messages: 'messages',
} as const;

export interface ProviderRegistryOptions {
  config: Pick<Config, 'providers'>;
  /** Tenant bring-your-own keys; absent means none. */
  tenantKeys?: TenantKeyLookup;
  /** Dispatcher for every live upstream call (tests inject a MockAgent); by default one shared undici Agent. */
  fetchDispatcher?: Dispatcher;
  timeouts?: Partial<ProviderTimeouts>;
  /** Replace the mock provider (tests with a fixed clock). */
  mock?: Provider;
  /** The budget of the live answers in progress, in total (src/gateway/answer-budget.ts); absent: none. */
  answerBudget?: AnswerBudget;
}

/** Tenant providers are kept per (key, base URL) so their connection reuse survives between requests. */
const MAX_TENANT_PROVIDERS = 256;

export function createProviderRegistry(options: ProviderRegistryOptions): ProviderRegistry {
  const { providers: settings } = options.config;
  const timeouts = { ...DEFAULT_PROVIDER_TIMEOUTS, ...options.timeouts };
  const ownAgent = options.fetchDispatcher ? null : createUpstreamAgent(timeouts);
  // Every live call's request write is noted, so that a failure after it is known to have reached the upstream.
  const dispatcher: Dispatcher = noteRequestWrites(options.fetchDispatcher ?? ownAgent!);
  const mock = options.mock ?? createMockProvider();
  const chat = settings.chatCompletions;
  const { maxAnswerBytes } = settings;
  const { answerBudget } = options;
  const live = (name: string, apiKey: string, baseUrl: string) =>
    createChatCompletionsProvider({ name, apiKey, baseUrl, dispatcher, timeouts, maxAnswerBytes, answerBudget });

  const platform = chat.apiKey ? live(PROVIDER_NAMES.platform, chat.apiKey, chat.baseUrl) : null;
  // A fallback key without its own address is a second key for the platform upstream.
  const fallback = chat.fallback.apiKey
    ? live(PROVIDER_NAMES.fallback, chat.fallback.apiKey, chat.fallback.baseUrl ?? chat.baseUrl)
    : null;
  const messagesConfigured = Boolean(settings.messages.apiKey);
  const messagesProvider = settings.messages.apiKey
    ? createMessagesProvider({ name: PROVIDER_NAMES.messages, apiKey: settings.messages.apiKey, baseUrl: settings.messages.baseUrl, dispatcher, timeouts, maxAnswerBytes, answerBudget })
    : null;
  const tenantProviders = new Map<string, Provider>();

  function tenantProvider(apiKey: string, baseUrl: string): Provider {
    const cacheKey = createHash('sha256').update(`${baseUrl}\n${apiKey}`).digest('hex');
    let provider = tenantProviders.get(cacheKey);
    if (!provider) {
      if (tenantProviders.size >= MAX_TENANT_PROVIDERS) tenantProviders.delete(tenantProviders.keys().next().value!);
      provider = live(PROVIDER_NAMES.tenant, apiKey, baseUrl);
      tenantProviders.set(cacheKey, provider);
    }
    return provider;
  }

  function unsupported(wire: Wire, model: string, family: ModelFamily): ProviderError {
    return new ProviderError('unsupported', `The model "${model}" (${family} family) is not offered on the ${wire} wire.`, {
      provider: family === 'messages' ? 'messages' : PROVIDER_NAMES.platform,
      retryable: false,
    });
  }

  function governedRouteUnsupported(model: string): ProviderError {
    return new ProviderError(
      'unsupported',
      `The governed route "${model}" is not built in this svc, and no live provider serves it: its governance fields (local_only, blocked_providers, budget_limit_usd, ...) could not be honoured, so nothing was sent upstream. Name a provider's model instead.`,
      { provider: PROVIDER_NAMES.platform, retryable: false },
    );
  }

  async function route(wire: Wire, model: string, tenantId: string): Promise<ProviderRoute> {
    const id = modelId(model);
    const family = familyOfId(id);
    const tenantKey = options.tenantKeys ? await options.tenantKeys(tenantId, family) : null;
    const configured: Provider[] = [];
    if (family === 'chat_completions') {
      if (tenantKey) configured.push(tenantProvider(tenantKey.apiKey, tenantKey.baseUrl ?? chat.baseUrl));
      if (platform) configured.push(platform);
      if (fallback) configured.push(fallback);
    } else if (messagesProvider) {
      configured.push(messagesProvider);
    }
    // A tenant key of the messages family counts as configured (the vault seam); it is served once the vault lands.
    const liveConfigured = configured.length > 0 || (family === 'messages' && tenantKey !== null);
    if (liveConfigured) {
      if (id === GOVERNED_ROUTE_MODEL) throw governedRouteUnsupported(model);
      const candidates = configured.filter((provider) => provider.supports(wire));
      if (candidates.length === 0) throw unsupported(wire, model, family);
      return { family, candidates };
    }
    if (!mock.supports(wire)) throw unsupported(wire, model, family);
    return { family, candidates: [mock] };
  }

  return {
    route,
    hasLiveProvider: () => platform !== null || fallback !== null || messagesConfigured,
    async close() {
      tenantProviders.clear();
      await ownAgent?.close();
    },
  };
}
