// Declarations for test-bundles.mjs: plain JavaScript, as test/run.mjs runs without tsx.
export declare const BUILD_DIR: string;
export declare function bundleTestFiles(root: string, files: string[]): Promise<{ outdir: string; bundles: Map<string, string>; remove(): void }>;
