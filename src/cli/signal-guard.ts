/**
 * Imported first by the `proxy` command (`bin/proxy.js`, `src/main.ts`): Node opens its
 * inspector, a debugger any local process can attach to and run code in (the keys the proxy
 * holds included), on a SIGUSR1 that no listener takes. The listeners that act on SIGUSR1
 * (reopening the logs) are hooked only once the server's context exists, so a `kill -USR1`
 * from log rotation during start-up (loading the bootstrap, which takes seconds for a large
 * one), or at any time in `--mode validate` or `proxy replay`, left the inspector listening on
 * 127.0.0.1:9229 for the life of the process. This listener takes the signal from the start;
 * the reference reopens its logs on it and has no inspector.
 */
process.on('SIGUSR1', () => {});
