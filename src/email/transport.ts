/**
 * How e-mail leaves svc (SPEC 5.5). The console transport (default) writes each message, links included, to the
 * service's standard error (src/core/operator-note.ts); the provider transport posts it to `{SVC_EMAIL_API_URL}` with
 * the provider key. Either way a failed delivery is an `EmailDeliveryError`, which the callers that must report it
 * turn into a retryable 503.
 */
import { request } from 'undici';
import type { RenderedEmail } from './templates.ts';

export interface EmailMessage extends RenderedEmail {
  to: string;
}

export interface Mailer {
  /** Resolves once the message is handed over; throws EmailDeliveryError otherwise. */
  send(message: EmailMessage): Promise<void>;
}

export class EmailDeliveryError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'EmailDeliveryError';
  }
}

/** Writes `svc: e-mail to <address>: <subject>` and the plain-text body (docs/accounts.md). */
export function consoleMailer(write: (text: string) => void, from: string): Mailer {
  return {
    async send(message) {
      const indented = message.text.trimEnd().replace(/^/gm, '  ');
      write(`svc: e-mail to ${message.to}: ${message.subject}\n  (from ${from})\n${indented}\n`);
    },
  };
}

const PROVIDER_TIMEOUT_MS = 10_000;

/** `POST {apiUrl}` with `{from, to: [address], subject, text, html}`; any 2xx is a delivery. */
export function providerMailer(options: { apiUrl: string; apiKey: string; from: string; timeoutMs?: number }): Mailer {
  const timeout = options.timeoutMs ?? PROVIDER_TIMEOUT_MS;
  return {
    async send(message) {
      let status: number;
      try {
        const response = await request(options.apiUrl, {
          method: 'POST',
          headers: { authorization: `Bearer ${options.apiKey}`, 'content-type': 'application/json' },
          body: JSON.stringify({ from: options.from, to: [message.to], subject: message.subject, text: message.text, html: message.html }),
          headersTimeout: timeout,
          bodyTimeout: timeout,
          signal: AbortSignal.timeout(timeout),
        });
        status = response.statusCode;
        await response.body.dump();
      } catch (error) {
        throw new EmailDeliveryError('the e-mail provider could not be reached', { cause: error });
      }
      if (status < 200 || status > 299) throw new EmailDeliveryError(`the e-mail provider answered HTTP ${status}`);
    },
  };
}
