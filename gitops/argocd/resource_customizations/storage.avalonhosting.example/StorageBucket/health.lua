-- Argo CD health of a StorageBucket (storage.avalonhosting.example/v1).
-- Plain Lua 5.1 with no string library: Argo CD runs argocd-cm health checks on gopher-lua
-- with only the base, table and os libraries open.
local hs = {}

-- Reasons after which nothing changes until a person edits something: the reasons of the
-- kstatus Stalled condition. Kept equal to BUCKET_TERMINAL_REASONS in
-- operator/bucket/reason-classes.ts by a unit test. Read from Ready rather than Stalled so
-- objects written before Stalled existed are judged the same way.
local terminal = {
  AdoptTargetNotFound = true,
  BucketOwnedByOtherCluster = true,
  BucketOwnedElsewhere = true,
  CredentialsRejected = true,
  InvalidSpec = true,
  ProviderChanged = true,
  ProviderConfigDeleting = true,
}

local annotations = obj.metadata.annotations
if annotations ~= nil and annotations["storage.avalonhosting.example/paused"] == "true" then
  hs.status = "Suspended"
  hs.message = "Reconciliation is paused (annotation storage.avalonhosting.example/paused)"
  return hs
end

local ready = nil
local observed = nil
if obj.status ~= nil then
  observed = obj.status.observedGeneration
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

-- A terminal reason recorded for an older generation may already be fixed by the edit that
-- made the current one, so it only counts for the generation it speaks for.
local current = ready.observedGeneration == nil or ready.observedGeneration == obj.metadata.generation
if ready.status == "False" and terminal[ready.reason] and current then
  hs.status = "Degraded"
  hs.message = describe(ready)
  return hs
end

if ready.status == "True" and observed == obj.metadata.generation then
  hs.status = "Healthy"
  hs.message = "Bucket is ready"
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
