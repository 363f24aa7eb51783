//! Prompt texts of the pipelines. Each asks for one JSON object and says exactly which keys it
//! must have; the parsers in `infer` and `procedural` accept nothing else.

pub(crate) const EXTRACT_SYSTEM: &str = r#"You maintain long-term memory for an assistant. Read the NEW messages and write down the durable facts they contain: who someone is, what they like or dislike, plans, events with their dates, relationships, places, jobs, possessions, decisions, corrections of earlier statements, and requests to forget something.

Rules:
- One fact per item, as a short self-contained sentence that names the person it is about (never "I", "he" or "the user" alone: use the speaker's name when it is known, otherwise "The user").
- Resolve relative dates against the date of the message they appear in ("yesterday" in a message dated 2024-05-08 becomes 2024-05-07; "last year" becomes the year).
- Write each fact in the language the messages are written in.
- Only use the NEW messages as the source of facts; earlier messages and known memories are there to resolve names and references. Do not repeat facts that the known memories already state unless the new messages change them.
- If the user asks to forget something, write a fact that says what should be forgotten, starting with "Forget:".
- Greetings, small talk and questions without information produce no facts. An empty list is a correct answer.
- For each fact give "speaker" (who said it), "sources" (the numbers of the NEW messages it comes from) and "entities" (people, places, organisations, dates, titles it mentions, each with a "type").
- When the messages say when the fact's event happened, give "event_time": the date (2023-05-07), month (2023-05) or year (2023) it happened, resolved against the date of its message; otherwise null. Never guess a date the messages do not give.

Answer with one JSON object and nothing else:
{"facts": [{"text": "...", "speaker": "...", "sources": [1], "entities": [{"name": "...", "type": "person|place|organization|date|title|other"}], "event_time": null}]}"#;

pub(crate) const RECONCILE_SYSTEM: &str = r#"You keep a memory store consistent. You get EXISTING memories, each with a number, and NEW facts, each with a number. Decide for every new fact exactly one event:
- "ADD": it is new information; keep it as a new memory.
- "UPDATE": it changes, corrects or replaces an existing memory (a move, a new job, a changed preference, a corrected date). Give the existing memory's number in "id" and the complete up-to-date sentence in "text".
- "DELETE": it says an existing memory is no longer true or must be forgotten, without replacing it by something new. Give the existing memory's number in "id".
- "NONE": it adds nothing beyond an existing memory.
Only use numbers from the EXISTING list. Give a short "reason" for every decision.

Answer with one JSON object and nothing else:
{"decisions": [{"fact": 1, "event": "ADD|UPDATE|DELETE|NONE", "id": 0, "text": "...", "reason": "..."}]}"#;

pub(crate) const PROCEDURAL_SYSTEM: &str = r#"You summarise an agent's work so that it can continue later. Read the numbered steps of the agent's history. Answer with one JSON object and nothing else:
{"task": "what the agent is trying to achieve", "progress": "where it stands and what comes next", "steps": [{"action": "what the agent did in this step, in a few words", "source": 3}]}
List the steps in order. "source" is the number of the message that holds the step's output or result; every action that produced output must be listed."#;

pub(crate) const ENRICH_SYSTEM: &str = r#"You file notes for an assistant's long-term memory. For every numbered NOTE write what is missing of:
- "keywords": the few most specific words or names of the note (people, places, things, events), most important first;
- "tags": short category labels a person would file it under (for example "travel", "family", "health");
- "context": one sentence saying who said or wrote it, when, and what it is about.
Only fill the fields listed as missing for that note; the others are given and stay as they are. Write in the note's language.

Answer with one JSON object and nothing else:
{"notes": [{"note": 1, "keywords": ["..."], "tags": ["..."], "context": "..."}]}"#;

pub(crate) const EVOLVE_SYSTEM: &str = r#"You organise a memory of notes. You get one NEW note and EXISTING notes, each with a number, with their context and tags. Decide:
- "links": which existing notes the new note is truly related to (same person, event, plan, topic or a continuation of it), each with a "strength" between 0 and 1 and a short "reason";
- "updates": existing notes whose context or tags should change now that the new note is known (for example a plan that the new note shows was carried out). Give the complete new "context" and/or the complete new "tags" list, and a short "reason". Never rewrite a note's text.
Only use numbers from the EXISTING list. Empty lists are a correct answer.

Answer with one JSON object and nothing else:
{"links": [{"id": 1, "strength": 0.8, "reason": "..."}], "updates": [{"id": 1, "context": "...", "tags": ["..."], "reason": "..."}]}"#;

pub(crate) const PROFILE_SYSTEM: &str = r#"You keep an assistant's long-term picture of one user. You get the user's CURRENT profile (named dimensions such as "hobbies", "work", "family", "health", "preferences", "plans", "personality"), KNOWN knowledge statements (each with a number like K3), and NEW conversation pages whose messages are numbered [1], [2], ...

Do three things with the NEW pages:
1. "profile": the dimensions that are new or that the pages change. Give each a short "name" (lower case, a few words), its complete up-to-date "value" (merge what the current profile says with what is new; do not drop details that still hold), and "messages": the numbers of the messages it rests on. Dimensions you do not mention stay as they are; list in "removed" the names of current dimensions the pages show to be wrong. Say in "reason" what changed and why. Only what the user reveals about themselves belongs in the profile, not passing topics.
2. "user_knowledge": durable facts about the user or their world that do not fit a profile dimension (events with dates, names of people and places, decisions), one self-contained sentence each, naming the user by name when known.
3. "assistant_knowledge": what the assistant did, provided, recommended or promised in the pages, one self-contained sentence each ("The assistant recommended ...").
For every statement give "messages" (the numbers it rests on). When a statement corrects or replaces a KNOWN statement, put that statement's number in "replaces" (e.g. "K3") with a short "reason"; when a KNOWN statement already says it, leave it out. Only use message numbers and K numbers that were shown. Empty lists are a correct answer; never invent what the pages do not say.

Answer with one JSON object and nothing else:
{"profile": {"dimensions": [{"name": "...", "value": "...", "messages": [1]}], "removed": [], "reason": "..."}, "user_knowledge": [{"text": "...", "messages": [2], "replaces": null, "reason": "..."}], "assistant_knowledge": [{"text": "...", "messages": [3]}]}"#;

pub(crate) const SUMMARY_SYSTEM: &str = r#"You keep the mid-term memory of an assistant as topic threads. You get one thread's current SUMMARY and KEYWORDS (both empty when the thread is new) and the NEW exchanges that join it.
Write the thread's updated summary in at most three sentences: who took part, what was said, decided or planned, with dates where the exchanges give them. Keep what the old summary says unless the new exchanges change it. Then give up to 10 keywords for the whole thread: its most specific names, places, things and events, most important first. Use the language of the conversation.

Answer with one JSON object and nothing else:
{"summary": "...", "keywords": ["..."]}"#;

pub(crate) const CONTINUITY_SYSTEM: &str = r#"You follow the threads of conversations. For every numbered PAIR you get an EARLIER exchange and the LATER exchange that came right after it in the same session. Decide whether the later exchange continues the earlier one's topic (the same subject, a follow-up question, an answer, a reference back) or turns to something new.

Answer with one JSON object and nothing else:
{"pairs": [{"pair": 1, "continues": true}]}"#;
