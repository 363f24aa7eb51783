-- wrk script: raw adds of new, distinct memories into the benchmark scope.
local n = 0
local acts = { "repaired a kayak", "learned a new song", "visited an old friend",
  "cooked a curry", "read about volcanoes", "planted an apple tree" }
request = function()
  n = n + 1
  local body = string.format(
    '{"text": "Load visitor %d %s on day %d", "user_id": "bench-user", "infer": false}',
    n, acts[(n % #acts) + 1], n % 365)
  return wrk.format("POST", "/v1/memories", {
    ["Content-Type"] = "application/json",
    ["Authorization"] = "Bearer " .. os.getenv("MNEMO_BENCH_KEY"),
  }, body)
end
