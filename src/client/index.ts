/** The reference client as a library: `new SvcClient(httpTransport(baseUrl, token))`, or another transport. */
export { ATTRIBUTION_DIMENSIONS, createSvcClient, DEFAULT_APP, DEFAULT_BUFFERED_TIMEOUT_MS, DEFAULT_STREAM_HEADERS_TIMEOUT_MS, DEFAULT_TRACE_TIMEOUT_MS, MAX_EVENT_PAGE_REQUESTS, SvcApiError, SvcClient } from './client.ts';
export type { ChatResult, ClientOptions, CreateClientOptions, MessagesResult } from './client.ts';
export { SvcStreamError } from './streams.ts';
export type { ChatChoice, ChatStreamChunk, MessagesStreamChunk, MessagesToolUse, RunCorrelation, ToolCall, Usage } from './streams.ts';
export { isPlainJson, tracedTool } from './tools.ts';
export type { ToolCallContext, ToolDefinition } from './tools.ts';
export type { ApiKey, AttributionDimension, AttributionQuery, AuditEvent, AuditIntegrity, AuditQuery, AuditWindow, CacheStat, EventWindow, EventWindowQuery, KeyMode, PageQuery, Pagination, RunDetailQuery, RunFilters, RunIntegrity, RunRoute, RunsPagination, RunStatus, RunSummary, SectionWindow, TimeWindow, TraceEventView } from './client.ts';
export type { ActiveOrg, Invite, InviteFilters, InviteStatus, OrgMember, OrgPlan, OrgRole, OrgSummary, PlatformRole, User, UserFilters } from './client.ts';
export { httpTransport, injectTransport, socketTransport } from './transport.ts';
export type { Injectable, Transport, TransportResponse } from './transport.ts';
