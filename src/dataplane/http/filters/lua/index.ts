import type { HttpFilterFactory } from '../api.js';
import { compileLua, compileLuaPerRoute, LUA_FIELD_TABLES, type LuaConfig } from './config.js';
import { LuaStream, startScripts } from './filter.js';

const CONFIG_TYPE = 'envoy.config.filter.http.lua.v2.Lua';
const PER_ROUTE_TYPE = 'envoy.config.filter.http.lua.v2.LuaPerRoute';

/** `envoy.filters.http.lua`: the reference's Lua scripts on a Lua 5.4 VM (docs/lua.md). */
export const luaFactory: HttpFilterFactory<LuaConfig> = {
  name: 'envoy.filters.http.lua',
  aliases: ['envoy.lua'],
  configType: CONFIG_TYPE,
  typeAliases: {
    'envoy.extensions.filters.http.lua.v3.Lua': CONFIG_TYPE,
    'envoy.extensions.filters.http.lua.v3.LuaPerRoute': PER_ROUTE_TYPE,
  },
  schema: { file: 'envoy/config/filter/http/lua/v2.proto' },
  fieldTables: LUA_FIELD_TABLES,
  compile: compileLua,
  perRoute: compileLuaPerRoute,
  perRouteType: PER_ROUTE_TYPE,
  perRouteByName: true,
  start(config, ctx, name = '') {
    // One Lua state per script per worker, as the reference: globals are per worker.
    const scope = ctx.scope.scope('lua');
    const scripts = startScripts(config, {
      log: ctx.log('lua'),
      errors: (config.statPrefix === '' ? scope : scope.scope(config.statPrefix)).counter('errors'),
      clusters: ctx.clusters,
    });
    return () => new LuaStream(scripts, config.clearRouteCache, CONFIG_TYPE, name);
  },
};
