-- Argo CD health of a BucketProviderConfig (storage.avalonhosting.example/v1).
-- Plain Lua 5.1 with no string library: Argo CD runs argocd-cm health checks on gopher-lua
-- with only the base, table and os libraries open.
local hs = {}

-- Reasons after which nothing changes until a person edits the config. Kept equal to
-- CONFIG_TERMINAL_REASONS in operator/bucket/reason-classes.ts by a unit test.
local terminal = {
  InvalidProviderConfig = true,
  SecretNotLabeled = true,
}

local ready = nil
local observed = nil
local count = 0
if obj.status ~= nil then
  observed = obj.status.observedGeneration
  if obj.status.bucketCount ~= nil then
    count = obj.status.bucketCount
  end
  if obj.status.conditions ~= nil then
    for _, c in ipairs(obj.status.conditions) do
      if c.type == "Ready" then
        ready = c
      end
    end
  end
end

local function describe(c)
  if c.message ~= nil and c.message ~= "" then
    return c.reason .. ": " .. c.message
  end
  return c.reason
end

if ready == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the operator to report status"
  return hs
end

local current = ready.observedGeneration == nil or ready.observedGeneration == obj.metadata.generation
if ready.status == "False" and terminal[ready.reason] and current then
  hs.status = "Degraded"
  hs.message = describe(ready)
  return hs
end

if ready.status == "True" and observed == obj.metadata.generation then
  hs.status = "Healthy"
  hs.message = "Config is ready; used by " .. count .. " StorageBucket(s)"
  return hs
end

-- A status that speaks for an older generation says nothing about the current spec.
hs.status = "Progressing"
if observed ~= obj.metadata.generation then
  hs.message = "Waiting for the operator to act on generation " .. obj.metadata.generation
else
  hs.message = describe(ready)
end
return hs
