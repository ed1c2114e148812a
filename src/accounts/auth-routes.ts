/**
 * `/api/v1/auth/*` (SPEC 4.4, 4.5; docs/accounts.md): login, logout, me, password change, signup, e-mail
 * verification and password recovery. Per-address limits are counted here, where the client address is known.
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { noQuery } from '../core/query-parameters.ts';
import { nameSchema } from '../core/text.ts';
import { pathParameter } from '../http/path-parameters.ts';
import { authOf, clientAddress } from '../http/surface.ts';
import { noBody } from '../http/write-inputs.ts';
import { clearSessionCookie, cookieValuesOf, SESSION_COOKIE, setSessionCookie } from '../http/session-cookie.ts';
import type { LimitsService } from '../limits/service.ts';
import { emailField } from './email-address.ts';
import { RESET_REQUESTED_MESSAGE, type SignupService } from './signup-service.ts';
import type { SessionsService } from './sessions-service.ts';
import { meView } from './views.ts';

/** Passwords are checked by the password rules (src/accounts/passwords.ts); this only bounds the body. */
export const passwordField = z.string().max(4096);
export const nameField = nameSchema(100);

const loginBody = z.object({ email: z.string().max(1024), password: passwordField }).strict();
const changeBody = z.object({ current: passwordField, new: passwordField }).strict();
const signupBody = z.object({ email: emailField, name: nameField, password: passwordField }).strict();
const resetRequestBody = z.object({ email: z.string().max(1024) }).strict();
const resetConfirmBody = z.object({ token: z.string().max(200), password: passwordField }).strict();
const tokenParams = z.object({ token: pathParameter });

export function authRoutes(deps: { sessions: SessionsService; signup: SignupService; limits: LimitsService }) {
  const { sessions, signup, limits } = deps;
  return async function (app: FastifyInstance) {
    app.post('/auth/login', { config: { access: 'public', setsSession: true } }, async (request, reply) => {
      const body = loginBody.parse(request.body);
      const { me, token } = await sessions.login(body, { address: clientAddress(request) });
      setSessionCookie(request, reply, token);
      return meView(me);
    });

    app.post('/auth/logout', { config: { access: 'public' } }, async (request, reply) => {
      noBody.parse(request.body);
      await sessions.logout(cookieValuesOf(request, SESSION_COOKIE));
      clearSessionCookie(request, reply);
      return { ok: true };
    });

    app.get('/auth/me', { config: { access: 'account' } }, async (request) => {
      noQuery.parse(request.query);
      return meView(await sessions.me(authOf(request)));
    });

    app.post('/auth/change-password', { config: { access: 'account' } }, async (request, reply) => {
      const body = changeBody.parse(request.body);
      const { me, token } = await sessions.changePassword(authOf(request), { current: body.current, next: body.new });
      setSessionCookie(request, reply, token);
      return meView(me);
    });

    app.post('/auth/signup', { config: { access: 'public', setsSession: true } }, async (request, reply) => {
      // The flag first: with signup off nothing is validated, counted or stored.
      signup.assertEnabled();
      const body = signupBody.parse(request.body);
      await limits.take('signup', clientAddress(request));
      const { me, token } = await signup.signup(body);
      setSessionCookie(request, reply, token);
      return reply.status(201).send(meView(me));
    });

    app.get('/auth/verify/:token', { config: { access: 'public' } }, async (request, reply) => {
      const { token } = tokenParams.parse(request.params);
      reply.header('cache-control', 'no-store');
      reply.header('referrer-policy', 'no-referrer');
      const { email } = await signup.verify(token);
      return { verified: true, email };
    });

    app.post('/auth/verification/resend', { config: { access: 'account' } }, async (request, reply) => {
      // No fields: the address is always the stored one (SPEC 4.5).
      noBody.parse(request.body);
      await signup.resendVerification(authOf(request));
      return reply.status(202).send({ sent: true });
    });

    app.post('/auth/password-reset/request', { config: { access: 'public' } }, async (request, reply) => {
      const body = resetRequestBody.parse(request.body);
      await limits.take('passwordReset', clientAddress(request));
      await signup.requestReset(body.email);
      return reply.status(202).send({ ok: true, message: RESET_REQUESTED_MESSAGE });
    });

    app.post('/auth/password-reset/confirm', { config: { access: 'public' } }, async (request) => {
      const body = resetConfirmBody.parse(request.body);
      await limits.take('passwordReset', clientAddress(request));
      await signup.confirmReset(body.token, body.password);
      return { ok: true };
    });
  };
}
