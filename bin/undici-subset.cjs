'use strict';
// The parts of undici (7.30.2) that svc loads at start-up; bin/build.mjs bundles `undici` as these plus lazy getters
// for every other export of undici's index, which loads the whole index on first use. Evaluating that index at start-up
// cost ~35 ms of CPU per `svc serve` for code the server never runs (fetch, WebSocket, EventSource, caches, cookies,
// mocks; its cookie module alone makes Node load its own copy of undici, through `globalThis.Headers`).
//
// Each export is the same object undici's index exports (the same modules), except `request`, which the index builds
// with a local `makeDispatcher`: copied below from undici/index.js of 7.30.2 (MIT). test/build/undici-subset.test.ts
// checks it against undici's own.
const Dispatcher = require('undici/lib/dispatcher/dispatcher');
const Agent = require('undici/lib/dispatcher/agent');
const buildConnector = require('undici/lib/core/connect');
const api = require('undici/lib/api');
const util = require('undici/lib/core/util');
const { InvalidArgumentError } = require('undici/lib/core/errors');
const { getGlobalDispatcher } = require('undici/lib/global');

// As undici's index does: `dispatcher.request(...)`, `.stream(...)` etc. on every dispatcher. Idempotent, so the
// index loading later does no harm.
Object.assign(Dispatcher.prototype, api);

function makeDispatcher(fn) {
  return (url, opts, handler) => {
    if (typeof opts === 'function') {
      handler = opts;
      opts = null;
    }

    if (!url || (typeof url !== 'string' && typeof url !== 'object' && !(url instanceof URL))) {
      throw new InvalidArgumentError('invalid url');
    }

    if (opts != null && typeof opts !== 'object') {
      throw new InvalidArgumentError('invalid opts');
    }

    if (opts && opts.path != null) {
      if (typeof opts.path !== 'string') {
        throw new InvalidArgumentError('invalid opts.path');
      }

      let path = opts.path;
      if (!opts.path.startsWith('/')) {
        path = `/${path}`;
      }

      url = new URL(util.parseOrigin(url).origin + path);
    } else {
      if (!opts) {
        opts = typeof url === 'object' ? url : {};
      }

      url = util.parseURL(url);
    }

    const { agent, dispatcher = getGlobalDispatcher() } = opts;

    if (agent) {
      throw new InvalidArgumentError('unsupported opts.agent. Did you mean opts.client?');
    }

    return fn.call(
      dispatcher,
      {
        ...opts,
        origin: url.origin,
        path: url.search ? `${url.pathname}${url.search}` : url.pathname,
        method: opts.method || (opts.body ? 'PUT' : 'GET'),
      },
      handler,
    );
  };
}

module.exports = {
  Dispatcher,
  Agent,
  buildConnector,
  request: makeDispatcher(api.request),
};
