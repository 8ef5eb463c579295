/**
 * The syntax check of Lua scripts for the compile step, which is synchronous while the Lua VM
 * loads asynchronously: a child process (the same Node, the same `wasmoon`) compiles each script
 * without running it and answers its error. Each distinct script text is checked once, so a
 * config compiled again (serve after validate, an LDS update) costs nothing more. Only the main
 * thread checks: it compiled (and refused) every config before a worker gets it, and a worker's
 * Lua state reports a script that does not load anyway.
 */
import { spawnSync } from 'node:child_process';
import { isMainThread } from 'node:worker_threads';

/** Compiles each `{ name, code }` from stdin as a chunk named `=name`; prints the errors (null when none). */
const CHILD = `
const { LuaWasm } = await import(process.env.PROXY_WASMOON_URL);
const lua = await LuaWasm.initialize();
const L = lua.luaL_newstate();
let input = '';
for await (const chunk of process.stdin) input += chunk;
const errors = JSON.parse(input).map(({ name, code }) => {
  const status = lua.luaL_loadbufferx(L, code, lua.module.lengthBytesUTF8(code), '=' + name, null);
  const error = status === 0 ? null : lua.lua_tolstring(L, -1, null);
  lua.lua_settop(L, 0);
  return error;
});
process.stdout.write(JSON.stringify(errors));
`;

const checked = new Map<string, string | null>();

/** A script to check: its chunk name (as the running filter names it) and its text. */
export interface ScriptText {
  name: string;
  code: string;
}

/**
 * The syntax error of each script (null when it compiles), or a string saying why the check
 * could not run (then the scripts are checked when a worker loads them).
 */
export function syntaxErrors(scripts: readonly ScriptText[]): Array<string | null> | string {
  if (!isMainThread) return scripts.map(() => null);
  const fresh = scripts.filter((s) => !checked.has(s.code));
  if (fresh.length > 0) {
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', CHILD], {
      input: JSON.stringify(fresh),
      encoding: 'utf8',
      timeout: 30_000,
      env: { ...process.env, PROXY_WASMOON_URL: import.meta.resolve('wasmoon') },
    });
    let errors: unknown;
    try {
      errors = JSON.parse(child.stdout);
    } catch {
      return `the Lua syntax check did not run (${child.error?.message ?? (child.stderr.trim().split('\n').pop() || `exit ${child.status}`)})`;
    }
    if (!Array.isArray(errors) || errors.length !== fresh.length)
      return 'the Lua syntax check answered nonsense';
    for (const [i, s] of fresh.entries())
      checked.set(s.code, typeof errors[i] === 'string' ? errors[i] : null);
  }
  return scripts.map((s) => checked.get(s.code) ?? null);
}
