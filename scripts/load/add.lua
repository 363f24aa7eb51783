-- wrk script: raw adds of new, distinct memories into the benchmark scope.
local n = 0
-- Distinct texts across wrk threads (a table address) and wrk processes (MNEMO_LOAD_TAG), so
-- no add repeats another's text when several drivers run at once.
local tag = ""
init = function(args)
  tag = (os.getenv("MNEMO_LOAD_TAG") or "") .. string.sub(tostring({}), -6)
end
local acts = { "repaired a kayak", "learned a new song", "visited an old friend",
  "cooked a curry", "read about volcanoes", "planted an apple tree" }
request = function()
  n = n + 1
  local body = string.format(
    '{"text": "Load visitor %s-%d %s on day %d", "user_id": "bench-user", "infer": false}',
    tag, n, acts[(n % #acts) + 1], n % 365)
  return wrk.format("POST", "/v1/memories", {
    ["Content-Type"] = "application/json",
    ["Authorization"] = "Bearer " .. os.getenv("MNEMO_BENCH_KEY"),
  }, body)
end
