/** The one pagination shape of every management list endpoint. */
import { z } from 'zod';

export interface Page {
  limit: number;
  offset: number;
  total: number;
  hasMore: boolean;
}

export function pageOf(limit: number, offset: number, total: number): Page {
  return { limit, offset, total, hasMore: offset + limit < total };
}

/** Query schema for `limit`/`offset` with a default and maximum page size. */
export function paginationQuery(defaultLimit = 50, maxLimit = 200) {
  return z.object({
    limit: z.coerce.number().int().min(1).max(maxLimit).default(defaultLimit),
    offset: z.coerce.number().int().min(0).default(0),
  });
}
