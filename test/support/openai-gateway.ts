/** svc over a fake upstream, listening, with the official `openai` client pointed at it (no retries); `env` adds configuration. */
import type { TestContext } from 'node:test';
import OpenAI from 'openai';
import { build } from './build.ts';
import type { FakeUpstream } from './fake-upstream.ts';
import { loadScaled } from './load-scaled.ts';

export async function openaiGateway(t: TestContext, upstream: FakeUpstream, env: Record<string, string> = {}) {
  const built = await build(t, { env: { CHATCOMP_API_KEY: 'sk-upstream-secret', CHATCOMP_BASE_URL: upstream.baseUrl, ...env } });
  const address = await built.app.listen({ port: 0, host: '127.0.0.1' });
  const client = new OpenAI({ baseURL: `${address}/v1`, apiKey: 'sk-local-dev', maxRetries: 0, timeout: loadScaled(20_000) });
  return { ...built, address, client };
}
