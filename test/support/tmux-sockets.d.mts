// Declarations for tmux-sockets.mjs: plain JavaScript, as test/run.mjs runs without tsx.
export declare const SOCKET_PREFIX_VARIABLE: string;
export declare function tmuxSocketPath(name: string): string;
export declare function fileSocketPrefix(runnerPid: number, index: number): string;
export declare function newTmuxSocketName(): string;
export declare function endTmuxServer(name: string): void;
export declare function endTmuxServersNamed(prefix: string): void;
