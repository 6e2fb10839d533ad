-- Runs an Argo CD health.lua the way Argo CD runs an argocd-cm health check, on Lua 5.1.
--   lua5.1 argocd-health-harness.lua path/to/health.lua < object-chunk
-- stdin is a Lua chunk returning the object as a table (written by argocd-health.test.ts).
-- Prints the returned health status as JSON, as Argo CD encodes it before unmarshalling.

local format, gsub, byte = string.format, string.gsub, string.byte
local write = io.write

local obj = assert(loadstring(io.read("*a"), "=object"))()
local script = assert(loadfile(arg[1]))

-- Only what Argo CD opens for a configured health check (SkipOpenLibs, then package, base,
-- table and a safe os): no string, io, math or debug library.
local env = {
  obj = obj,
  assert = assert, error = error, ipairs = ipairs, next = next, pairs = pairs, pcall = pcall,
  print = print, rawequal = rawequal, rawget = rawget, rawset = rawset, select = select,
  tonumber = tonumber, tostring = tostring, type = type, unpack = unpack, xpcall = xpcall,
  getmetatable = getmetatable, setmetatable = setmetatable, _VERSION = _VERSION,
  table = table,
  os = { time = os.time, date = os.date, clock = os.clock },
}
env._G = env
setfenv(script, env)
-- Without the string library gopher-lua strings have no methods (s:sub() fails): drop them.
getmetatable("").__index = nil

local ok, hs = pcall(script)
getmetatable("").__index = string

local function quote(s)
  return '"' .. gsub(s, '[%c"\\]', function(c)
    return format("\\u%04x", byte(c))
  end) .. '"'
end

if not ok then
  write('{"error":', quote(tostring(hs)), '}\n')
elseif type(hs) ~= "table" then
  write('{"error":', quote("expect table output from Lua script, not " .. type(hs)), '}\n')
else
  local parts = {}
  for _, k in ipairs({ "status", "message" }) do
    local v = hs[k]
    if type(v) == "string" then
      parts[#parts + 1] = quote(k) .. ":" .. quote(v)
    elseif v ~= nil then
      -- Argo CD unmarshals into string fields, so anything else is an error there too.
      write('{"error":', quote(k .. " is a " .. type(v) .. ", not a string"), '}\n')
      return
    end
  end
  write("{", table.concat(parts, ","), "}\n")
end
