/**
 * The Lua side of the handle API, loaded into each state before the user's script. The
 * objects (`headers()`, `body()`, `streamInfo()`, ...) are small tables whose methods call the
 * primitives of filter.ts with the stream's id; the primitives are taken out of the globals so
 * a script reaches them only through the handles. Each `envoy_on_request` / `envoy_on_response`
 * runs as a coroutine; a handle that must wait (the body, the trailers, an HTTP call) yields
 * WAIT and is resumed when the proxy has what it asked for.
 */
export const PRELUDE = String.raw`
local P = {}
for _, name in ipairs({ 'hget', 'hadd', 'hset', 'hdel', 'hlist', 'hcount', 'hat', 'body', 'blen', 'bget',
  'bset', 'chunk', 'trailers', 'respond', 'log', 'info', 'dmget', 'dmset', 'dmlist', 'ssl',
  'metadata', 'readfile', 'env', 'httpcall', 'httpresult' }) do
  P[name] = _G['__proxy_' .. name]
  _G['__proxy_' .. name] = nil
end
local yield, create, resume, cstatus = coroutine.yield, coroutine.create, coroutine.resume, coroutine.status
local setmetatable, pairs, select, type, error = setmetatable, pairs, select, type, error
local WAIT, DONE = {}, {}

-- Scripts are read from the real file system (the VM's own is empty): require, dofile, loadfile.
-- As LuaJIT's defaults, LUA_PATH in the environment replacing them (';;' standing for them).
local default_path = './?.lua;/usr/local/share/lua/5.1/?.lua;/usr/local/share/lua/5.1/?/init.lua;' ..
  '/usr/local/share/lua/5.4/?.lua;/usr/local/share/lua/5.4/?/init.lua'
local lua_path = P.env('LUA_PATH')
package.path = lua_path and lua_path:gsub(';;', ';' .. default_path .. ';') or default_path
package.cpath = ''
local function loadfrom(path, mode, env)
  local code = P.readfile(path)
  if code == nil then return nil, 'cannot open ' .. path end
  return load(code, '@' .. path, mode, env)
end
loadfile = function(path, mode, env) return loadfrom(path, mode, env) end
dofile = function(path)
  local f, err = loadfrom(path)
  if not f then error(err, 2) end
  return f()
end
package.searchers = {
  package.searchers[1],
  function(name)
    local tried = {}
    local file = name:gsub('%.', '/')
    for template in package.path:gmatch('[^;]+') do
      local path = template:gsub('%?', file)
      local code = P.readfile(path)
      if code ~= nil then
        local f, err = load(code, '@' .. path)
        if not f then error(err, 2) end
        return f, path
      end
      tried[#tried + 1] = "\n\tno file '" .. path .. "'"
    end
    return table.concat(tried)
  end,
}
-- Nothing a script does may end or fork the proxy.
os.exit, os.execute, os.remove, os.rename, os.tmpname, io.popen = nil, nil, nil, nil, nil, nil

local Headers = {}
Headers.__index = Headers
function Headers:get(k) return P.hget(self[1], self[2], k) end
function Headers:add(k, v) P.hadd(self[1], self[2], k, v) end
function Headers:replace(k, v) P.hset(self[1], self[2], k, v) end
function Headers:remove(k) P.hdel(self[1], self[2], k) end
function Headers:getNumValues(k) return P.hcount(self[1], self[2], k) end
function Headers:getAtIndex(k, i) return P.hat(self[1], self[2], k, i) end
function Headers:__pairs()
  local list = { P.hlist(self[1], self[2]) }
  local i = -1
  return function()
    i = i + 2
    if list[i] ~= nil then return list[i], list[i + 1] end
  end, self, nil
end

local Body = {}
Body.__index = Body
function Body:length() return P.blen(self[1], self[2]) end
function Body:getBytes(index, length) return P.bget(self[1], self[2], index, length) end
function Body:setBytes(s) return P.bset(self[1], self[2], s) end

local Metadata = {}
Metadata.__index = Metadata
function Metadata:get(k) return self[1][k] end
function Metadata:__pairs() return next, self[1], nil end

local DynamicMetadata = {}
DynamicMetadata.__index = DynamicMetadata
function DynamicMetadata:get(ns) return P.dmget(self[1], ns) end
function DynamicMetadata:set(ns, k, v) P.dmset(self[1], ns, k, v) end
function DynamicMetadata:__pairs() return next, P.dmlist(self[1]), nil end

local Ssl = {}
Ssl.__index = Ssl
function Ssl:peerCertificatePresented() return P.ssl(self[1], 'presented') end
function Ssl:uriSanPeerCertificate() return P.ssl(self[1], 'uriSans') end
function Ssl:dnsSansPeerCertificate() return P.ssl(self[1], 'dnsSans') end
function Ssl:subjectPeerCertificate() return P.ssl(self[1], 'subject') end

local StreamInfo = {}
StreamInfo.__index = StreamInfo
function StreamInfo:protocol() return P.info(self[1], 'protocol') end
function StreamInfo:downstreamLocalAddress() return P.info(self[1], 'local') end
function StreamInfo:downstreamDirectRemoteAddress() return P.info(self[1], 'directRemote') end
function StreamInfo:downstreamRemoteAddress() return P.info(self[1], 'remote') end
function StreamInfo:requestedServerName() return P.info(self[1], 'sni') end
function StreamInfo:dynamicMetadata() return setmetatable({ self[1] }, DynamicMetadata) end
function StreamInfo:downstreamSslConnection()
  if P.ssl(self[1], 'tls') then return setmetatable({ self[1] }, Ssl) end
end

local Connection = {}
Connection.__index = Connection
function Connection:ssl()
  if P.ssl(self[1], 'tls') then return setmetatable({ self[1] }, Ssl) end
end

local Handle = {}
Handle.__index = Handle
function Handle:headers() return self.h end
function Handle:body(always_wrap)
  local state = P.body(self.id, self.dir)
  while state == 0 do yield(WAIT); state = P.body(self.id, self.dir) end
  if state == 2 and not always_wrap then return nil end
  return setmetatable({ self.id, self.dir }, Body)
end
function Handle:bodyChunks()
  local id, dir = self.id, self.dir
  return function()
    local state = P.chunk(id, dir)
    while state == 0 do yield(WAIT); state = P.chunk(id, dir) end
    if state == 1 then return setmetatable({ id, dir + 2 }, Body) end
  end
end
function Handle:trailers()
  local state = P.trailers(self.id, self.dir)
  while state == 0 do yield(WAIT); state = P.trailers(self.id, self.dir) end
  if state == 1 then return setmetatable({ self.id, self.dir + 2 }, Headers) end
end
function Handle:metadata() return setmetatable({ P.metadata(self.id) }, Metadata) end
function Handle:streamInfo() return setmetatable({ self.id }, StreamInfo) end
function Handle:connection() return setmetatable({ self.id }, Connection) end
function Handle:respond(headers, body)
  if type(headers) ~= 'table' then error('respond() takes a table of headers', 2) end
  local flat = {}
  for k, v in pairs(headers) do flat[#flat + 1] = k; flat[#flat + 1] = v end
  P.respond(self.id, self.dir, body, table.unpack(flat))
  yield(DONE)
end
function Handle:httpCall(cluster, headers, body, timeout, asynchronous)
  if asynchronous ~= nil and type(asynchronous) ~= 'boolean' then
    error("http call asynchronous flag must be 'true', 'false', or empty", 2)
  end
  if type(headers) ~= 'table' then error('http call headers must be a table', 2) end
  local flat = {}
  for k, v in pairs(headers) do
    if type(v) == 'table' then
      for _, one in ipairs(v) do flat[#flat + 1] = k; flat[#flat + 1] = one end
    else
      flat[#flat + 1] = k; flat[#flat + 1] = v
    end
  end
  P.httpcall(self.id, self.dir, cluster, body, timeout, asynchronous == true, table.unpack(flat))
  if asynchronous then return end
  local answer = { P.httpresult(self.id) }
  while answer[1] == 0 do yield(WAIT); answer = { P.httpresult(self.id) } end
  local out = {}
  for i = 3, #answer, 2 do out[answer[i]] = answer[i + 1] end
  return out, answer[2] or nil
end
for level, name in ipairs({ 'logTrace', 'logDebug', 'logInfo', 'logWarn', 'logErr', 'logCritical' }) do
  Handle[name] = function(self, message) P.log(self.id, level, message) end
end

local running = {}
local function step(key, co, ...)
  local ok, what = resume(co, ...)
  if not ok then running[key] = nil; return 3, what end
  if cstatus(co) == 'dead' then running[key] = nil; return 0 end
  if what == WAIT then return 1 end
  running[key] = nil
  if what == DONE then return 2 end
  return 3, 'script performed an unexpected yield'
end

-- dir 0: envoy_on_request; 1: envoy_on_response. Answers 0 done, 1 waiting, 2 responded, 3 error.
function __proxy_start(id, dir, fn_name)
  local key = id * 2 + dir
  local co = create(_G[fn_name])
  running[key] = co
  local handle = setmetatable({ id = id, dir = dir, h = setmetatable({ id, dir }, Headers),
  }, Handle)
  return step(key, co, handle)
end
function __proxy_resume(id, dir)
  local key = id * 2 + dir
  local co = running[key]
  if co == nil then return 0 end
  return step(key, co)
end
function __proxy_drop(id)
  running[id * 2] = nil
  running[id * 2 + 1] = nil
end
`;
