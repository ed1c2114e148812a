/** The default tenant exists from the first start (SPEC 2.1); identities without a tenant of their own act in it. */
export const DEFAULT_TENANT_ID = 'default';
export const DEFAULT_TENANT_NAME = 'Default';
