//! `kill -9` of a running `mnemo serve` while 8 clients add over HTTP, then a restart on the same
//! data directory, round after round. After each crash `mnemo doctor` finds the store consistent
//! with one message per memory (no partial record), every acknowledged add is stored exactly
//! once, search finds every memory by its own text as the top hit, and a retry with the add's
//! idempotency key returns the original result: for acknowledged adds (same id, `replayed`) and
//! for adds whose answer the crash swallowed (stored at most once before the retry, exactly once
//! after it). Each round one add's answer is certain to be lost after its write: it is left
//! unread on its connection when the kill lands.
//!
//! `MNEMO_CRASH_ROUNDS` (default 3) sets the rounds, `MNEMO_CRASH_SEED` the randomness (the texts,
//! and after how many acknowledged adds each kill lands); the seed is printed so a failing run
//! can be repeated. `scripts/crash-rounds.sh` runs 20 rounds and prints the figures.

use crate::clients::{key_for_admin, Server};
use crate::*;
use serde_json::json;
use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::net::TcpStream;
use std::sync::mpsc;
use std::time::Duration;

const CLIENTS: usize = 8;
/// Texts prepared per client and round: more than a round can use, the kill comes first.
const PER_CLIENT: usize = 200;

/// SplitMix64: small, and the same sequence for the same seed on every platform.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a>(&mut self, words: &[&'a str]) -> &'a str {
        words[self.below(words.len())]
    }
}

const ADJECTIVES: &[&str] = &[
    "amber", "brisk", "copper", "dusty", "eager", "frosty", "gentle", "hollow", "ivory", "jolly",
    "kindly", "lanky", "mellow", "nimble", "olive", "plucky", "quiet", "rusty", "silver", "tawny",
];
const CREATURES: &[&str] = &[
    "heron", "badger", "otter", "falcon", "walrus", "lynx", "tortoise", "gecko", "pelican",
    "marmot", "bison", "ferret", "starling", "octopus", "raven", "beaver", "moose", "salmon",
    "weasel", "cricket",
];
const VERBS: &[&str] = &[
    "painted", "repaired", "borrowed", "buried", "polished", "counted", "carried", "folded", "hid",
    "tuned", "weighed", "sketched", "juggled", "guarded", "stacked", "traded", "baked", "mended",
    "sorted", "launched",
];
const THINGS: &[&str] = &[
    "lantern",
    "violin",
    "teapot",
    "compass",
    "kite",
    "anchor",
    "ledger",
    "helmet",
    "barrel",
    "saddle",
    "telescope",
    "quilt",
    "sundial",
    "cauldron",
    "harp",
    "wagon",
    "ladder",
    "bellows",
    "trumpet",
    "hammock",
];
const PLACES: &[&str] = &[
    "Lisbon", "Oslo", "Nairobi", "Quito", "Hanoi", "Tbilisi", "Perth", "Cusco", "Dakar", "Riga",
    "Kyoto", "Bergen", "Tunis", "Lima", "Porto", "Krakow", "Accra", "Hobart", "Split", "Tromso",
];

/// A fresh text the whole run has not used: exact repeats would make "found by its own text"
/// ambiguous.
fn text(rng: &mut Rng, used: &mut HashSet<String>) -> String {
    loop {
        let t = format!(
            "the {} {} {} the {} {} in {}",
            rng.pick(ADJECTIVES),
            rng.pick(CREATURES),
            rng.pick(VERBS),
            rng.pick(ADJECTIVES),
            rng.pick(THINGS),
            rng.pick(PLACES)
        );
        if used.insert(t.clone()) {
            return t;
        }
    }
}

/// One add: its idempotency key, scope and text.
#[derive(Debug, Clone)]
struct Add {
    key: String,
    user: String,
    text: String,
}

impl Add {
    fn body(&self) -> Value {
        json!({"text": self.text, "user_id": self.user, "infer": false,
               "idempotency_key": self.key, "metadata": {"crash_key": self.key}})
    }
}

/// What one client saw in one round.
#[derive(Default)]
struct ClientRun {
    /// Adds answered 2xx, with the id they returned.
    acked: Vec<(Add, String)>,
    /// The add in flight when the connection broke (its answer, if any, was lost).
    lost: Vec<Add>,
    problems: Vec<String>,
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        // Only a guard against a hang; a killed server breaks connections at once.
        .timeout_global(Some(Duration::from_secs(300)))
        .build()
        .into()
}

/// POST `body` to `url`; `Ok((status, json))` when a whole answer came back.
fn post(agent: &ureq::Agent, url: &str, admin: &str, body: &Value) -> Result<(u16, Value), String> {
    let mut resp = agent
        .post(url)
        .header("Authorization", &format!("Bearer {admin}"))
        .send_json(body)
        .map_err(|e| e.to_string())?;
    let status = resp.status().as_u16();
    let text = resp
        .body_mut()
        .read_to_string()
        .map_err(|e| e.to_string())?;
    let v = serde_json::from_str(&text).map_err(|e| format!("{status}, not JSON ({e}): {text}"))?;
    Ok((status, v))
}

/// Adds `adds` one after another until the server goes away, telling `acks` of each 2xx.
fn client(url: String, admin: String, adds: Vec<Add>, acks: mpsc::Sender<()>) -> ClientRun {
    let agent = agent();
    let mut run = ClientRun::default();
    for add in adds {
        match post(&agent, &format!("{url}/v1/memories"), &admin, &add.body()) {
            Ok((status, v)) if (200..300).contains(&status) => {
                let Some(id) = v["results"][0]["id"].as_str() else {
                    run.problems
                        .push(format!("{}: a 2xx without an id: {v}", add.key));
                    break;
                };
                if v["replayed"] != false || v["results"][0]["memory"] != add.text.as_str() {
                    run.problems
                        .push(format!("{}: a first add came back as {v}", add.key));
                }
                run.acked.push((add, id.to_string()));
                let _ = acks.send(());
            }
            Ok((status, v)) => {
                run.problems
                    .push(format!("{}: refused with {status}: {v}", add.key));
                break;
            }
            Err(_) => {
                run.lost.push(add);
                break;
            }
        }
    }
    run
}

/// Sends `add` on a raw connection and waits until its answer has arrived, without reading it:
/// the server has written the memory, the client never learns the outcome. This is the answer a
/// crash swallows after the write, made certain once a round (the kill decides the others).
fn send_unread(url: &str, admin: &str, add: &Add) -> TcpStream {
    let host = url.trim_start_matches("http://");
    let mut tcp = TcpStream::connect(host).expect("the server accepts");
    let body = add.body().to_string();
    write!(
        tcp,
        "POST /v1/memories HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {admin}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    // Blocks until the first byte of the answer is there; it is left unread.
    let n = tcp.peek(&mut [0u8; 1]).expect("the server answers");
    assert_eq!(n, 1, "the server closed without answering the unread add");
    tcp
}

/// The running figures, printed at the end (and by `scripts/crash-rounds.sh`).
#[derive(Default)]
struct Figures {
    rounds: usize,
    acked: usize,
    lost: usize,
    lost_landed: usize,
    lost_written_by_retry: usize,
    replays_checked: usize,
    searches: usize,
    duplicates: usize,
    integrity_failures: usize,
    missing: usize,
    search_misses: usize,
    replay_mismatches: usize,
}

/// `mnemo doctor` on the stopped server's data: consistent indexes and one message per raw
/// memory. Returns the memory count.
fn doctor(data: &Path, figures: &mut Figures, problems: &mut Vec<String>) -> Option<u64> {
    let out = mnemo(data)
        .arg("doctor")
        .output()
        .expect("mnemo doctor runs");
    let report: Option<Value> = serde_json::from_slice(&out.stdout).ok();
    match report {
        Some(r)
            if out.status.success()
                && r["store"]["consistent"] == true
                && r["store"]["messages"] == r["store"]["memories"] =>
        {
            r["store"]["memories"].as_u64()
        }
        _ => {
            figures.integrity_failures += 1;
            problems.push(format!(
                "doctor after round {}: {}\n{}",
                figures.rounds,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
            None
        }
    }
}

/// Every memory the server exports, by idempotency key: `(id, text)` per stored copy.
fn stored(server: &Server, admin: &str) -> HashMap<String, Vec<(String, String)>> {
    let mut resp = agent()
        .get(&format!("{}/v1/export", server.url))
        .header("Authorization", &format!("Bearer {admin}"))
        .call()
        .expect("export answers");
    assert_eq!(resp.status().as_u16(), 200, "export: {}", server.log());
    let body = resp
        .body_mut()
        .with_config()
        .limit(256 << 20)
        .read_to_string()
        .unwrap();
    let mut by_key: HashMap<String, Vec<(String, String)>> = HashMap::new();
    for line in body.lines() {
        let r: Value = serde_json::from_str(line).unwrap();
        if r["type"] != "memory" {
            continue;
        }
        let key = r["metadata"]["crash_key"]
            .as_str()
            .unwrap_or_else(|| panic!("a memory no client added: {r}"));
        by_key.entry(key.to_string()).or_default().push((
            r["id"].as_str().unwrap().to_string(),
            r["memory"].as_str().unwrap().to_string(),
        ));
    }
    by_key
}

/// Checks the restarted server against everything acknowledged so far (`ledger`: key → add and
/// id), retries the last round's adds, acknowledged and lost, and adds the lost ones to the
/// ledger once their retry answered.
fn verify(
    server: &Server,
    admin: &str,
    ledger: &mut HashMap<String, (Add, String)>,
    round: &[ClientRun],
    figures: &mut Figures,
    problems: &mut Vec<String>,
) {
    let before = stored(server, admin);
    for (key, (_, id)) in ledger.iter() {
        match before.get(key).map(Vec::as_slice) {
            Some([(got, _)]) if got == id => {}
            Some([]) | None => {
                figures.missing += 1;
                problems.push(format!("acknowledged add {key} ({id}) is missing"));
            }
            Some(copies) => {
                figures.duplicates += usize::from(copies.len() > 1);
                problems.push(format!(
                    "acknowledged add {key} ({id}) is stored as {copies:?}"
                ));
            }
        }
    }
    let agent = agent();
    let add_url = format!("{}/v1/memories", server.url);
    for (add, id) in round.iter().flat_map(|r| &r.acked) {
        figures.replays_checked += 1;
        match post(&agent, &add_url, admin, &add.body()) {
            Ok((200, v)) if v["replayed"] == true && v["results"][0]["id"] == id.as_str() => {}
            other => {
                figures.replay_mismatches += 1;
                problems.push(format!(
                    "retry of acknowledged {} ({id}): {other:?}",
                    add.key
                ));
            }
        }
    }
    for add in round.iter().flat_map(|r| &r.lost) {
        figures.lost += 1;
        let landed = match before.get(&add.key).map(Vec::as_slice) {
            None | Some([]) => None,
            Some([(id, _)]) => Some(id.clone()),
            Some(copies) => {
                figures.duplicates += 1;
                problems.push(format!("lost add {} is stored as {copies:?}", add.key));
                continue;
            }
        };
        match post(&agent, &add_url, admin, &add.body()) {
            Ok((200, v)) => {
                let id = v["results"][0]["id"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                let replayed = v["replayed"] == true;
                match &landed {
                    Some(was) if replayed && *was == id => figures.lost_landed += 1,
                    None if !replayed && !id.is_empty() => figures.lost_written_by_retry += 1,
                    _ => {
                        figures.replay_mismatches += 1;
                        problems.push(format!(
                            "retry of lost {} (stored before: {landed:?}): {v}",
                            add.key
                        ));
                    }
                }
                ledger.insert(add.key.clone(), (add.clone(), id));
            }
            other => {
                figures.replay_mismatches += 1;
                problems.push(format!("retry of lost {}: {other:?}", add.key));
            }
        }
    }
    // After the retries: every add ever sent is stored exactly once, and nothing else is.
    let after = stored(server, admin);
    let copies: usize = after.values().map(Vec::len).sum();
    if copies != ledger.len() {
        problems.push(format!(
            "{copies} memories stored for {} adds after the retries",
            ledger.len()
        ));
    }
    for (key, (add, id)) in ledger.iter() {
        match after.get(key).map(Vec::as_slice) {
            Some([(got, text)]) if got == id && *text == add.text => {}
            other => {
                figures.duplicates += usize::from(other.is_some_and(|c| c.len() > 1));
                problems.push(format!(
                    "after the retries {key} ({id}) is stored as {other:?}"
                ));
            }
        }
    }
    // Every memory is the top hit for its own text.
    let search_url = format!("{}/v1/memories/search", server.url);
    for (add, id) in ledger.values() {
        figures.searches += 1;
        let body = json!({"query": add.text, "user_id": add.user, "top_k": 3});
        match post(&agent, &search_url, admin, &body) {
            Ok((200, v)) if v["results"][0]["id"] == id.as_str() => {}
            other => {
                figures.search_misses += 1;
                problems.push(format!("search for {} ({id}): {other:?}", add.key));
            }
        }
    }
}

#[test]
fn sigkill_of_the_server_under_concurrent_adds_loses_and_repeats_nothing() {
    let rounds: usize = std::env::var("MNEMO_CRASH_ROUNDS")
        .ok()
        .map(|r| r.parse().expect("MNEMO_CRASH_ROUNDS is a number"))
        .unwrap_or(3);
    let seed: u64 = std::env::var("MNEMO_CRASH_SEED")
        .ok()
        .map(|s| s.parse().expect("MNEMO_CRASH_SEED is a number"))
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    println!("server crash: seed {seed} (repeat with MNEMO_CRASH_SEED={seed}), {rounds} rounds");
    assert!(rounds >= 1);
    let mut rng = Rng(seed);
    let mut used = HashSet::new();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let admin = key_for_admin(&data);
    // Rate limiting would turn adds into 429s: this test is about crashes.
    let serve = ["--rate-limit-per-minute", "0"];
    let mut ledger: HashMap<String, (Add, String)> = HashMap::new();
    let mut figures = Figures::default();
    let mut problems = Vec::new();
    let mut server = Server::start_with(&data, &[], &serve, &[]);
    for r in 1..=rounds {
        let kill_after = 1 + rng.below(64);
        let (tx, rx) = mpsc::channel();
        let clients: Vec<_> = (0..CLIENTS)
            .map(|c| {
                let adds = (0..PER_CLIENT)
                    .map(|i| Add {
                        key: format!("crash-{seed}-r{r}-c{c}-{i}"),
                        user: format!("client{c}"),
                        text: text(&mut rng, &mut used),
                    })
                    .collect();
                let (url, admin, tx) = (server.url.clone(), admin.clone(), tx.clone());
                std::thread::spawn(move || client(url, admin, adds, tx))
            })
            .collect();
        drop(tx);
        for n in 0..kill_after {
            if rx.recv().is_err() {
                panic!(
                    "round {r}: the clients stopped after {n} acknowledged adds; server log:\n{}",
                    server.log()
                );
            }
        }
        let unread = Add {
            key: format!("crash-{seed}-r{r}-unread"),
            user: "unread".into(),
            text: text(&mut rng, &mut used),
        };
        let connection = send_unread(&server.url, &admin, &unread);
        let status = server.kill();
        drop(connection);
        let mut round: Vec<ClientRun> = clients.into_iter().map(|c| c.join().unwrap()).collect();
        round.push(ClientRun {
            lost: vec![unread],
            ..ClientRun::default()
        });
        for run in &round {
            problems.extend(run.problems.iter().cloned());
        }
        let acked: usize = round.iter().map(|c| c.acked.len()).sum();
        let lost: usize = round.iter().map(|c| c.lost.len()).sum();
        figures.rounds = r;
        figures.acked += acked;
        for (add, id) in round.iter().flat_map(|c| &c.acked) {
            ledger.insert(add.key.clone(), (add.clone(), id.clone()));
        }
        let memories = doctor(&data, &mut figures, &mut problems);
        server = Server::start_with(&data, &[], &serve, &[]);
        verify(
            &server,
            &admin,
            &mut ledger,
            &round,
            &mut figures,
            &mut problems,
        );
        println!(
            "round {r}/{rounds}: killed ({status}) once {kill_after} adds were acknowledged and \
             one answer was left unread; acknowledged {acked}, lost in flight {lost} (the unread \
             one included); doctor: {} memories; store now {}",
            memories.map_or("FAILED".into(), |m| m.to_string()),
            ledger.len()
        );
    }
    let f = &figures;
    println!(
        "figures: rounds={} adds_acknowledged={} lost_in_flight_retried={} \
         (landed_before_kill={} written_by_retry={}) replays_checked={} searches={} \
         memories={} duplicates={} integrity_failures={} missing_acknowledged={} \
         search_misses={} replay_mismatches={}",
        f.rounds,
        f.acked,
        f.lost,
        f.lost_landed,
        f.lost_written_by_retry,
        f.replays_checked,
        f.searches,
        ledger.len(),
        f.duplicates,
        f.integrity_failures,
        f.missing,
        f.search_misses,
        f.replay_mismatches
    );
    assert!(
        problems.is_empty(),
        "seed {seed}: {} problems:\n{}",
        problems.len(),
        problems.join("\n")
    );
    assert_eq!(figures.rounds, rounds);
    assert!(figures.acked >= rounds, "every round acknowledged adds");
    assert_eq!(
        figures.lost,
        figures.lost_landed + figures.lost_written_by_retry
    );
    assert_eq!(ledger.len(), figures.acked + figures.lost);
    assert!(
        figures.lost_landed >= rounds,
        "each round's unread answer was written, and its retry replayed"
    );
}
