import { CONFIG_TYPE } from '../../../../bootstrap/extensions.js';
import type { HttpFilterFactory } from '../api.js';
import { compileLua, compileLuaPerRoute, LUA_FIELD_TABLES, type LuaConfig } from './config.js';
import { LuaStream, startScripts } from './filter.js';

/** `envoy.filters.http.lua`: the reference's Lua scripts on a Lua 5.4 VM (docs/lua.md). */
export const luaFactory: HttpFilterFactory<LuaConfig> = {
  configType: CONFIG_TYPE.lua,
  fieldTables: LUA_FIELD_TABLES,
  compile: compileLua,
  perRoute: compileLuaPerRoute,
  perRouteType: 'envoy.config.filter.http.lua.v2.LuaPerRoute',
  start(config, ctx) {
    // One Lua state per script per worker, as the reference: globals are per worker.
    const scripts = startScripts(config, {
      log: ctx.log('lua'),
      errors: ctx.scope.scope('lua').counter('errors'),
      clusters: ctx.clusters,
    });
    return () => new LuaStream(scripts, CONFIG_TYPE.lua);
  },
};
