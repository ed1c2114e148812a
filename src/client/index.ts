/** The reference client as a library: `new SvcClient(httpTransport(baseUrl, token))`, or another transport. */
export { SvcApiError, SvcClient } from './client.ts';
export type { ApiKey, AuditEvent, AuditIntegrity, CacheStat, EventWindow, KeyMode, Pagination, RunFilters, RunIntegrity, RunSummary, TraceEventView } from './client.ts';
export { httpTransport, injectTransport, socketTransport } from './transport.ts';
export type { Injectable, Transport, TransportResponse } from './transport.ts';
