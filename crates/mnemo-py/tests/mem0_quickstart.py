# The Mem0 open-source quickstart flow, written as a Mem0 user would, run against mnemo with only
# the import line changed (was: from mem0 import Memory). Exits non-zero if any step misbehaves.
from mnemo import Memory

m = Memory()

conversation = [
    {"role": "user", "content": "Hi, I'm Alex. I'm looking for a good book for my holidays."},
    {"role": "assistant", "content": "Happy to help! Do you like mysteries?"},
    {"role": "user", "content": "Not really, but I adore science fiction, especially space operas."},
    {"role": "assistant", "content": "Noted: science fiction, no mysteries."},
]
added = m.add(conversation, user_id="alex", metadata={"category": "books"})
assert added["results"], added
for item in added["results"]:
    assert {"id", "memory", "event"} <= item.keys(), item

related = m.search(query="Which genre does Alex enjoy?", user_id="alex")
assert related["results"], related
assert any("science fiction" in r["memory"] for r in related["results"][:3]), related
for r in related["results"]:
    assert {"id", "memory", "score", "metadata", "created_at", "user_id"} <= r.keys(), r

all_memories = m.get_all(user_id="alex")
assert len(all_memories["results"]) == len(added["results"])
memory_id = all_memories["results"][0]["id"]

specific = m.get(memory_id)
assert specific["id"] == memory_id

result = m.update(memory_id=memory_id, data="Alex loves space operas above all.")
assert "updated" in result["message"].lower(), result
assert m.get(memory_id)["memory"] == "Alex loves space operas above all."

history = m.history(memory_id=memory_id)
assert [h["event"] for h in history] == ["ADD", "UPDATE"], history

m.delete(memory_id=memory_id)
assert len(m.get_all(user_id="alex")["results"]) == len(added["results"]) - 1

m.delete_all(user_id="alex")
assert m.get_all(user_id="alex")["results"] == []
m.reset()
print("quickstart ok")
