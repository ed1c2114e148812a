// Declarations for file-timeouts.mjs: plain JavaScript, as test/run.mjs runs without tsx.
export declare const DEFAULT_TEST_TIMEOUT_MS: number;
export declare const MAX_LOAD_FACTOR: number;
export declare const KILL_AFTER_MS: number;
export declare function fileTimeouts(options: { load: number; cpus: number; env: Record<string, string | undefined> }): { factor: number; test: number; file: number };
export declare function loadFactor(options: { load: number; cpus: number }): number;
