/**
 * The Lua side of the handle API, loaded into each state before the user's script. The
 * objects (`headers()`, `body()`, `streamInfo()`, ...) are small tables whose methods call the
 * primitives of filter.ts with the stream's id; the primitives are taken out of the globals so
 * a script reaches them only through the handles. Each `envoy_on_request` / `envoy_on_response`
 * runs as a coroutine; a handle that must wait (the body, the trailers, an HTTP call) yields
 * WAIT and is resumed when the proxy has what it asked for.
 */
/**
 * The methods of the reference's handle objects that these do not have, by object: calling one
 * raises an error naming it, and the compile step warns of a script that calls one (config.ts).
 */
export const ABSENT_METHODS = {
  Handle: ['setUpstreamOverrideHost', 'connectionStreamInfo'],
  Headers: ['setHttp1ReasonPhrase'],
  StreamInfo: ['dynamicTypedMetadata'],
  Ssl: [
    'sessionId',
    'ciphersuiteId',
    'oidsPeerCertificate',
    'oidsLocalCertificate',
    'urlEncodedPemEncodedPeerCertificateChain',
  ],
} as const;

export const PRELUDE = String.raw`
local P = {}
for _, name in ipairs({ 'hget', 'hadd', 'hset', 'hdel', 'hlist', 'hcount', 'hat', 'body', 'blen', 'bget',
  'bset', 'chunk', 'trailers', 'respond', 'log', 'info', 'dmget', 'dmset', 'dmlist', 'ssl',
  'metadata', 'readfile', 'env', 'httpcall', 'httpresult', 'fstate', 'tls', 'reroute', 'context', 'b64', 'now',
  'verify' }) do
  P[name] = _G['__proxy_' .. name]
  _G['__proxy_' .. name] = nil
end
local yield, create, resume, cstatus = coroutine.yield, coroutine.create, coroutine.resume, coroutine.status
local setmetatable, pairs, select, type, error = setmetatable, pairs, select, type, error
local WAIT, DONE = {}, {}
-- What the reference's handles have and these do not: calling one is an error naming it.
local function absent(class, names)
  for _, name in ipairs(names) do
    class[name] = function()
      error(name .. '() is not implemented by this proxy (docs/lua.md, "The handle API")', 2)
    end
  end
end
EnvoyTimestampResolution = { MILLISECOND = 0, MICROSECOND = 1 }

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

-- A header table as flat name, value pairs; a value may be a list of values.
local function flatten(headers)
  local flat = {}
  for k, v in pairs(headers) do
    if type(v) == 'table' then
      for _, one in ipairs(v) do flat[#flat + 1] = k; flat[#flat + 1] = one end
    else
      flat[#flat + 1] = k; flat[#flat + 1] = v
    end
  end
  return flat
end

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
function Body:setBytes(s)
  if type(s) ~= 'string' then error('setBytes() takes a string', 2) end
  return P.bset(self[1], self[2], s)
end

local Metadata = {}
Metadata.__index = Metadata
function Metadata:get(k) return self[1][k] end
function Metadata:__pairs() return next, self[1], nil end

local DynamicMetadata = {}
DynamicMetadata.__index = DynamicMetadata
function DynamicMetadata:get(ns) return P.dmget(self[1], ns) end
function DynamicMetadata:set(ns, k, v) P.dmset(self[1], ns, k, v) end
function DynamicMetadata:__pairs() return next, P.dmlist(self[1]), nil end

local ParsedName = {}
ParsedName.__index = ParsedName
function ParsedName:commonName() return P.tls(self[1], 'commonName') end
function ParsedName:organizationName() return P.tls(self[1], 'organizations') end

local Ssl = {}
Ssl.__index = Ssl
function Ssl:peerCertificatePresented() return P.ssl(self[1], 'presented') end
function Ssl:uriSanPeerCertificate() return P.ssl(self[1], 'uriSans') end
function Ssl:dnsSansPeerCertificate() return P.ssl(self[1], 'dnsSans') end
function Ssl:subjectPeerCertificate() return P.ssl(self[1], 'subject') end
for method, fact in pairs({ peerCertificateValidated = 'validated', sha256PeerCertificateDigest = 'sha256',
  serialNumberPeerCertificate = 'serial', issuerPeerCertificate = 'issuer',
  validFromPeerCertificate = 'validFrom', expirationPeerCertificate = 'expiration',
  urlEncodedPemEncodedPeerCertificate = 'pem', subjectLocalCertificate = 'localSubject',
  uriSanLocalCertificate = 'localUriSans', dnsSansLocalCertificate = 'localDnsSans',
  tlsVersion = 'version', ciphersuiteString = 'cipher' }) do
  Ssl[method] = function(self) return P.tls(self[1], fact) end
end
function Ssl:parsedSubjectPeerCertificate()
  if P.ssl(self[1], 'presented') then return setmetatable({ self[1] }, ParsedName) end
end

local FilterState = {}
FilterState.__index = FilterState
function FilterState:get(name, field) return P.fstate(self[1], name, field) end

local StreamInfo = {}
StreamInfo.__index = StreamInfo
function StreamInfo:protocol() return P.info(self[1], 'protocol') end
function StreamInfo:downstreamLocalAddress() return P.info(self[1], 'local') end
function StreamInfo:downstreamDirectLocalAddress() return P.info(self[1], 'directLocal') end
function StreamInfo:routeName() return P.info(self[1], 'route') end
-- virtual_clusters are refused in route configs, so none ever matches.
function StreamInfo:virtualClusterName() return '' end
function StreamInfo:filterState() return setmetatable({ self[1] }, FilterState) end
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
  P.respond(self.id, self.dir, body, table.unpack(flatten(headers)))
  yield(DONE)
end
-- The second form: httpCall(cluster, headers, body, options).
local CALL_OPTIONS = { asynchronous = 'boolean', timeout_ms = 'number', trace_sampled = 'boolean',
  return_duplicate_headers = 'boolean', send_xff = 'boolean' }
function Handle:httpCall(cluster, headers, body, timeout, asynchronous)
  local options = { asynchronous = asynchronous }
  if type(timeout) == 'table' then
    options = timeout
    timeout = options.timeout_ms or 0
    for k, v in pairs(options) do
      if CALL_OPTIONS[k] == nil then error('http call option ' .. tostring(k) .. ' is not known', 2) end
      if type(v) ~= CALL_OPTIONS[k] then error('http call option ' .. k .. ' must be a ' .. CALL_OPTIONS[k], 2) end
    end
  end
  if options.asynchronous ~= nil and type(options.asynchronous) ~= 'boolean' then
    error("http call asynchronous flag must be 'true', 'false', or empty", 2)
  end
  if type(headers) ~= 'table' then error('http call headers must be a table', 2) end
  local async = options.asynchronous == true
  P.httpcall(self.id, self.dir, cluster, body, timeout, async, options.send_xff ~= false,
    table.unpack(flatten(headers)))
  if async then return end
  local answer = { P.httpresult(self.id) }
  while answer[1] == 0 do yield(WAIT); answer = { P.httpresult(self.id) } end
  local out = {}
  for i = 3, #answer, 2 do
    local k, v = answer[i], answer[i + 1]
    local had = out[k]
    if options.return_duplicate_headers and had ~= nil then
      if type(had) == 'table' then had[#had + 1] = v else out[k] = { had, v } end
    else
      out[k] = v
    end
  end
  return out, answer[2] or nil
end
function Handle:clearRouteCache() P.reroute(self.id) end
function Handle:filterContext() return P.context(self.id) end
function Handle:base64Escape(s) return P.b64(s) end
function Handle:timestamp(format)
  if format ~= nil and format ~= EnvoyTimestampResolution.MILLISECOND then
    error('timestamp format must be MILLISECOND.', 2)
  end
  return P.now(0)
end
function Handle:timestampString(resolution)
  if resolution ~= nil and resolution ~= EnvoyTimestampResolution.MILLISECOND
    and resolution ~= EnvoyTimestampResolution.MICROSECOND then
    error('timestamp format must be MILLISECOND or MICROSECOND.', 2)
  end
  return P.now(resolution or 0, true)
end
local PublicKey = {}
PublicKey.__index = PublicKey
function Handle:importPublicKey(der, length)
  return setmetatable({ string.sub(der, 1, length or #der) }, PublicKey)
end
function Handle:verifySignature(hash, key, signature, signatureLength, data, dataLength)
  if getmetatable(key) ~= PublicKey then error('verifySignature() takes a key from importPublicKey()', 2) end
  return P.verify(hash, key[1], string.sub(signature, 1, signatureLength), string.sub(data, 1, dataLength))
end
${Object.entries(ABSENT_METHODS)
  .map(([object, names]) => `absent(${object}, { ${names.map((n) => `'${n}'`).join(', ')} })`)
  .join('\n')}
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
