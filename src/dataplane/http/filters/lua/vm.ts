/**
 * One Lua 5.4 state on WebAssembly (the `wasmoon` package), driven through the C API that
 * package exports: the request path pushes and reads strings itself instead of going through
 * wasmoon's object proxies, which cost ~15 µs a call against ~1 µs this way.
 */
import type { LuaGlobal, LuaWasm } from 'wasmoon';

/** `lua_type` answers. */
export const LUA_TNIL = 0;
export const LUA_TBOOLEAN = 1;
export const LUA_TNUMBER = 3;
export const LUA_TSTRING = 4;
export const LUA_TTABLE = 5;

const LUA_MASKCOUNT = 8;
const LUA_MULTRET = -1;
/** Instructions between two looks at the clock while a script runs. */
const HOOK_EVERY = 10_000;

/** The raw exports of the Lua module (emscripten `_lua_*`), typed as far as this file uses them. */
interface LuaModule {
  HEAPU8: Uint8Array;
  HEAPU32: Uint32Array;
  _malloc(size: number): number;
  _free(ptr: number): void;
  addFunction(fn: (...args: number[]) => number | undefined, signature: string): number;
  _lua_settop(L: number, idx: number): void;
  _lua_gettop(L: number): number;
  _lua_type(L: number, idx: number): number;
  _lua_tolstring(L: number, idx: number, lenPtr: number): number;
  _lua_tonumberx(L: number, idx: number, isnum: number): number;
  _lua_toboolean(L: number, idx: number): number;
  _lua_pushlstring(L: number, ptr: number, len: number): number;
  _lua_pushnumber(L: number, n: number): void;
  _lua_pushinteger(L: number, n: bigint): void;
  _lua_pushboolean(L: number, b: number): void;
  _lua_pushnil(L: number): void;
  _lua_pushcclosure(L: number, fn: number, n: number): void;
  _lua_createtable(L: number, narr: number, nrec: number): void;
  _lua_settable(L: number, idx: number): void;
  _lua_next(L: number, idx: number): number;
  _lua_setglobal(L: number, namePtr: number): void;
  _lua_getglobal(L: number, namePtr: number): number;
  _lua_pcallk(L: number, nargs: number, nresults: number, errfunc: number, ctx: number, k: number): number;
  _lua_error(L: number): number;
  _lua_sethook(L: number, fn: number, mask: number, count: number): void;
  _luaL_loadbufferx(L: number, ptr: number, len: number, namePtr: number, mode: number): number;
  _luaL_openlibs(L: number): void;
  _lua_checkstack(L: number, n: number): number;
}

/** A primitive the Lua side calls: reads its arguments from `vm`, pushes results, returns how many. */
export type Primitive = (vm: LuaVm) => number;

/** An error a primitive raises in the script (a Lua error, catchable with `pcall`). */
export class LuaRaise extends Error {}

/**
 * The module is compiled once per thread (~70 ms) and shared by every state of that thread;
 * each state is its own heap inside it. wasmoon itself is imported then, by the first Lua
 * filter's first state: a thread whose config has no Lua filter never loads it (0.5 MB of
 * heap and its 148 KB source a thread; bench/README.md, "Footprint: the main thread serves").
 */
let modulePromise: Promise<{ wasm: LuaWasm; Global: typeof LuaGlobal }> | null = null;
function luaModule(): Promise<{ wasm: LuaWasm; Global: typeof LuaGlobal }> {
  modulePromise ??= import('wasmoon').then(async ({ LuaGlobal: Global, LuaWasm: Wasm }) => ({
    wasm: await Wasm.initialize(),
    Global,
  }));
  return modulePromise;
}

/**
 * The time the running script must stop by; the instruction hook compares it with the clock.
 * One script runs at a time on a thread, so one deadline serves every state.
 */
let deadline = Number.POSITIVE_INFINITY;
let hookPointer = 0;

export interface VmLimits {
  /** The longest one run of a script (from a start or resume to its next wait), ms. */
  runMs: number;
  /** The most memory the state may hold, bytes. */
  memoryBytes: number;
}

/** The outcome of a protected call: ok, or the error message Lua raised. */
export type CallResult = { ok: true } | { ok: false; error: string };

export class LuaVm {
  /** The running thread (a coroutine's state while a primitive runs, else the main state). */
  T: number;
  private readonly m: LuaModule;
  private scratch = 0;
  private scratchSize = 0;
  private heap: Buffer;
  private readonly names = new Map<string, number>();
  private readonly lenPtr: number;

  private constructor(
    private readonly global: LuaGlobal,
    module: LuaModule,
    private readonly limits: VmLimits,
  ) {
    this.m = module;
    this.T = global.address;
    this.heap = Buffer.from(module.HEAPU8.buffer);
    this.lenPtr = module._malloc(4);
  }

  /** A fresh state with the standard libraries, the limits armed. */
  static async create(limits: VmLimits): Promise<LuaVm> {
    const { wasm, Global } = await luaModule();
    // The traced allocator is what enforces the memory cap (a refused allocation is a Lua
    // "not enough memory" error in the script, never a crash).
    const global = new Global(wasm, true);
    global.setMemoryMax(limits.memoryBytes);
    const vm = new LuaVm(global, wasm.module as unknown as LuaModule, limits);
    vm.m._luaL_openlibs(global.address);
    vm.m._lua_sethook(global.address, vm.hook(), LUA_MASKCOUNT, HOOK_EVERY);
    return vm;
  }

  /** Bytes the state holds now. */
  memoryUsed(): number {
    return this.global.getMemoryUsed();
  }

  /**
   * The instruction hook, made once per thread. Coroutines inherit it from the state that
   * creates them (Lua 5.4 copies hooks into new threads). Past the deadline it raises an
   * error at every instruction, so a script that catches it with `pcall` in a loop cannot go on.
   */
  private hook(): number {
    if (hookPointer !== 0) return hookPointer;
    const m = this.m;
    hookPointer = m.addFunction((L: number) => {
      if (performance.now() <= deadline) return undefined;
      m._lua_sethook(L, hookPointer, LUA_MASKCOUNT, 1);
      this.pushStringOn(L, 'script ran past its time limit');
      return m._lua_error(L);
    }, 'vii');
    return hookPointer;
  }

  /** Registers `fn` as the global function `name`. */
  register(name: string, fn: Primitive): void {
    const m = this.m;
    const pointer = m.addFunction((L: number) => {
      const outer = this.T;
      this.T = L;
      try {
        return fn(this);
      } catch (err) {
        const text = err instanceof LuaRaise ? err.message : `internal error: ${(err as Error).message}`;
        this.pushStringOn(L, text);
        // Unwinds the script to its protected call (a longjmp, thrown through this frame).
        return m._lua_error(L);
      } finally {
        this.T = outer;
      }
    }, 'ii');
    m._lua_pushcclosure(this.global.address, pointer, 0);
    m._lua_setglobal(this.global.address, this.cName(name));
  }

  /** Loads and runs a chunk (a script's top level) under the limits. */
  run(code: string, chunkName: string): CallResult {
    const L = this.global.address;
    const m = this.m;
    m._lua_settop(L, 0);
    const bytes = Buffer.from(code, 'utf8');
    const ptr = this.reserve(bytes.length);
    this.bytesView().set(bytes, ptr);
    if (m._luaL_loadbufferx(L, ptr, bytes.length, this.cName(chunkName), 0) !== 0) {
      const error = this.str(-1);
      m._lua_settop(L, 0);
      return { ok: false, error };
    }
    return this.pcall(0);
  }

  /** Whether a global of that name is a function. */
  hasFunction(name: string): boolean {
    const L = this.global.address;
    const type = this.m._lua_getglobal(L, this.cName(name));
    this.m._lua_settop(L, 0);
    return type === 6;
  }

  /**
   * Calls the global function `name` with number and string arguments under the limits; its
   * results stay on the main state's stack (read with `str`/`num`, then `clear`).
   */
  call(name: string, ...args: Array<number | string>): CallResult {
    const L = this.global.address;
    this.m._lua_settop(L, 0);
    this.m._lua_getglobal(L, this.cName(name));
    for (const a of args) {
      if (typeof a === 'number') this.m._lua_pushnumber(L, a);
      else this.pushStringOn(L, a);
    }
    return this.pcall(args.length);
  }

  /** Empties the main state's stack after reading a call's results. */
  clear(): void {
    this.m._lua_settop(this.global.address, 0);
  }

  private pcall(nargs: number): CallResult {
    const L = this.global.address;
    const outer = this.T;
    this.T = L;
    deadline = performance.now() + this.limits.runMs;
    try {
      const status = this.m._lua_pcallk(L, nargs, LUA_MULTRET, 0, 0, 0);
      if (status === 0) return { ok: true };
      const error = this.m._lua_type(L, -1) === LUA_TSTRING ? this.str(-1) : 'error object is not a string';
      this.m._lua_settop(L, 0);
      return { ok: false, error };
    } finally {
      deadline = Number.POSITIVE_INFINITY;
      this.T = outer;
      this.m._lua_sethook(L, hookPointer, LUA_MASKCOUNT, HOOK_EVERY);
    }
  }

  // ---- the running thread's stack ----

  /** Arguments on the running thread's stack. */
  top(): number {
    return this.m._lua_gettop(this.T);
  }

  type(idx: number): number {
    return this.m._lua_type(this.T, idx);
  }

  /** A string (or number) argument as bytes read as latin1 (one char per byte, as headers are held). */
  str(idx: number): string {
    const ptr = this.m._lua_tolstring(this.T, idx, this.lenPtr);
    if (ptr === 0) return '';
    const len = this.m.HEAPU32[this.lenPtr >> 2] as number;
    return this.bytesView().toString('latin1', ptr, ptr + len);
  }

  /** A string argument's bytes, copied out of the Lua heap. */
  bytes(idx: number): Buffer {
    const ptr = this.m._lua_tolstring(this.T, idx, this.lenPtr);
    if (ptr === 0) return Buffer.alloc(0);
    const len = this.m.HEAPU32[this.lenPtr >> 2] as number;
    return Buffer.from(this.bytesView().subarray(ptr, ptr + len));
  }

  num(idx: number): number {
    return this.m._lua_tonumberx(this.T, idx, 0);
  }

  bool(idx: number): boolean {
    return this.m._lua_toboolean(this.T, idx) !== 0;
  }

  /** A string argument, or a Lua error naming the argument. */
  checkString(idx: number, what: string): string {
    const t = this.type(idx);
    if (t !== LUA_TSTRING && t !== LUA_TNUMBER) throw new LuaRaise(`${what} must be a string`);
    return this.str(idx);
  }

  pushString(s: string): void {
    this.pushStringOn(this.T, s);
  }

  pushBytes(b: Uint8Array): void {
    const ptr = this.reserve(b.length);
    this.bytesView().set(b, ptr);
    this.m._lua_pushlstring(this.T, ptr, b.length);
  }

  /** A number: an integer as Lua's integer subtype (so `tostring` prints `5`, not `5.0`). */
  pushNumber(n: number): void {
    if (Number.isSafeInteger(n)) this.m._lua_pushinteger(this.T, BigInt(n));
    else this.m._lua_pushnumber(this.T, n);
  }

  pushBool(b: boolean): void {
    this.m._lua_pushboolean(this.T, b ? 1 : 0);
  }

  pushNil(): void {
    this.m._lua_pushnil(this.T);
  }

  /** Room for `n` more values on the running thread's stack, or a Lua error. */
  ensureStack(n: number): void {
    if (this.m._lua_checkstack(this.T, n) === 0) throw new LuaRaise('too many values for the Lua stack');
  }

  /** A JSON value (metadata) as a Lua value: objects and arrays become tables. */
  pushJson(value: unknown): void {
    if (value === null || value === undefined) this.pushNil();
    else if (typeof value === 'string') this.pushString(value);
    else if (typeof value === 'number') this.pushNumber(value);
    else if (typeof value === 'boolean') this.pushBool(value);
    else this.pushTable(value as object);
  }

  private pushTable(value: object): void {
    this.ensureStack(3);
    this.m._lua_createtable(this.T, 0, 0);
    const entries: Array<[string | number, unknown]> = Array.isArray(value)
      ? value.map((v, i) => [i + 1, v])
      : Object.entries(value as Record<string, unknown>);
    for (const [k, v] of entries) {
      if (typeof k === 'number') this.pushNumber(k);
      else this.pushString(k);
      this.pushJson(v);
      this.m._lua_settable(this.T, -3);
    }
  }

  /** A Lua value (metadata to store) as JSON: tables with keys 1..n become arrays. */
  readJson(idx: number, depth = 0): unknown {
    const t = this.type(idx);
    if (t === LUA_TNIL) return null;
    if (t === LUA_TBOOLEAN) return this.bool(idx);
    if (t === LUA_TNUMBER) return this.num(idx);
    if (t === LUA_TSTRING) return this.str(idx);
    if (t !== LUA_TTABLE) throw new LuaRaise('metadata values are nil, booleans, numbers, strings or tables');
    if (depth > 32) throw new LuaRaise('metadata nests deeper than 32 tables');
    const abs = idx < 0 ? this.top() + idx + 1 : idx;
    const out: Record<string, unknown> = {};
    this.ensureStack(3);
    this.m._lua_pushnil(this.T);
    while (this.m._lua_next(this.T, abs) !== 0) {
      const key =
        this.type(-2) === LUA_TNUMBER ? String(this.num(-2)) : this.checkString(-2, 'a metadata key');
      out[key] = this.readJson(-1, depth + 1);
      this.m._lua_settop(this.T, -2);
    }
    const keys = Object.keys(out);
    if (keys.length > 0 && keys.every((k, i) => k === String(i + 1))) return keys.map((k) => out[k]);
    return out;
  }

  // ---- memory ----

  private pushStringOn(L: number, s: string): void {
    const ptr = this.reserve(s.length);
    const len = this.bytesView().write(s, ptr, s.length, 'latin1');
    this.m._lua_pushlstring(L, ptr, len);
  }

  /** A NUL-terminated name in wasm memory, kept for the state's life (global names are few). */
  private cName(name: string): number {
    let ptr = this.names.get(name);
    if (ptr === undefined) {
      const bytes = Buffer.from(`${name}\0`, 'utf8');
      ptr = this.m._malloc(bytes.length);
      this.bytesView().set(bytes, ptr);
      this.names.set(name, ptr);
    }
    return ptr;
  }

  /** The scratch area, at least `n` bytes, through which strings enter the Lua heap. */
  private reserve(n: number): number {
    if (n > this.scratchSize) {
      if (this.scratch !== 0) this.m._free(this.scratch);
      this.scratchSize = Math.max(n, 2 * this.scratchSize, 256);
      this.scratch = this.m._malloc(this.scratchSize);
      if (this.scratch === 0) throw new LuaRaise('out of memory');
    }
    return this.scratch;
  }

  /** A Buffer over wasm memory, made again when the memory grew (its old buffer detaches). */
  private bytesView(): Buffer {
    if (this.heap.buffer !== this.m.HEAPU8.buffer) this.heap = Buffer.from(this.m.HEAPU8.buffer);
    return this.heap;
  }
}
