-- wrk script: raw adds of new, distinct memories into the benchmark scope.
local n = 0
-- Distinct texts across wrk threads (a table address) and wrk processes (MNEMO_LOAD_TAG), so
-- no add repeats another's text when several drivers run at once.
local tag = ""
-- MNEMO_LOAD_RUNS=1: each driver thread writes its own run of the user (its own scope, so
-- writers do not queue on one scope's write lock); otherwise every add goes to the user.
local run = ""
init = function(args)
  tag = (os.getenv("MNEMO_LOAD_TAG") or "") .. string.sub(tostring({}), -6)
  if os.getenv("MNEMO_LOAD_RUNS") == "1" then
    run = string.format(', "run_id": "load-%s"', tag)
  end
end
local acts = { "repaired a kayak", "learned a new song", "visited an old friend",
  "cooked a curry", "read about volcanoes", "planted an apple tree" }
request = function()
  n = n + 1
  local body = string.format(
    '{"text": "Load visitor %s-%d %s on day %d", "user_id": "bench-user"%s, "infer": false}',
    tag, n, acts[(n % #acts) + 1], n % 365, run)
  return wrk.format("POST", "/v1/memories", {
    ["Content-Type"] = "application/json",
    ["Authorization"] = "Bearer " .. os.getenv("MNEMO_BENCH_KEY"),
  }, body)
end
