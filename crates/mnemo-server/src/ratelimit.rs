//! A token bucket per API key: `per_minute` tokens refill evenly, up to `burst` at once. A
//! request costs one token plus one for every [`BODY_BYTES_PER_TOKEN`] of its body, so a key
//! that sends large bodies (the work of embedding and indexing grows with the text) gets
//! proportionally fewer requests: its share of the server stays bounded by its rate, not by how
//! much it packs into each request. A request is let in while the key holds at least one token;
//! what it costs beyond that is taken as debt (at most `burst`), which the key's next requests
//! wait out.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::time::{Duration, Instant};

#[derive(Debug)]
pub struct RateLimiter {
    /// Tokens per second; 0 turns limiting off.
    rate: f64,
    burst: f64,
    buckets: Mutex<HashMap<String, (f64, Instant)>>,
}

impl RateLimiter {
    pub fn new(per_minute: u32, burst: u32) -> Self {
        Self {
            rate: f64::from(per_minute) / 60.0,
            burst: f64::from(burst.max(1)),
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// Lets a request with a body of `body_bytes` in when `key` holds a token, taking its whole
    /// cost ([`cost_of`]); otherwise says how long until the key may send again.
    pub fn check_request(&self, key: &str, body_bytes: u64) -> Result<(), Duration> {
        self.check_at(key, cost_of(body_bytes), Instant::now())
    }

    fn check_at(&self, key: &str, cost: f64, now: Instant) -> Result<(), Duration> {
        if self.rate <= 0.0 {
            return Ok(());
        }
        let mut buckets = self.buckets.lock();
        let (tokens, last) = buckets.entry(key.to_string()).or_insert((self.burst, now));
        let elapsed = now.saturating_duration_since(*last).as_secs_f64();
        *tokens = (*tokens + elapsed * self.rate).min(self.burst);
        *last = now;
        if *tokens >= 1.0 {
            *tokens = (*tokens - cost).max(-self.burst);
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - *tokens) / self.rate))
        }
    }
}

/// Request body bytes that cost one more token: about one embedding window of English text
/// (256 model tokens), so a request's price follows the embedding and indexing work it asks for.
pub const BODY_BYTES_PER_TOKEN: u64 = 1024;

/// What a request with a body of `body_bytes` costs: one token, plus one per
/// [`BODY_BYTES_PER_TOKEN`] (in fractions).
pub fn cost_of(body_bytes: u64) -> f64 {
    1.0 + body_bytes as f64 / BODY_BYTES_PER_TOKEN as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_gets_its_burst_then_waits_and_keys_are_separate() {
        let rl = RateLimiter::new(60, 3);
        let t = Instant::now();
        for _ in 0..3 {
            assert!(rl.check_at("a", 1.0, t).is_ok());
        }
        let wait = rl.check_at("a", 1.0, t).unwrap_err();
        assert!(
            wait > Duration::ZERO && wait <= Duration::from_secs(1),
            "{wait:?}"
        );
        assert!(rl.check_at("b", 1.0, t).is_ok());
        assert!(rl.check_at("a", 1.0, t + Duration::from_secs(1)).is_ok());
        assert!(RateLimiter::new(0, 1).check_request("x", 1 << 30).is_ok());
    }

    #[test]
    fn large_bodies_cost_their_size_and_the_debt_is_waited_out() {
        assert_eq!(cost_of(0), 1.0);
        assert_eq!(cost_of(4 * BODY_BYTES_PER_TOKEN), 5.0);
        // 60 a minute (one a second), burst 10.
        let rl = RateLimiter::new(60, 10);
        let t = Instant::now();
        // A key with a token is let in, and a 16-window body (17 tokens) leaves it in debt…
        assert!(rl
            .check_at("big", cost_of(16 * BODY_BYTES_PER_TOKEN), t)
            .is_ok());
        // …which it waits out: 7 tokens short of one, 8 seconds at one a second.
        let wait = rl.check_at("big", 1.0, t).unwrap_err();
        assert_eq!(wait, Duration::from_secs(8));
        assert!(rl.check_at("big", 1.0, t + Duration::from_secs(7)).is_err());
        assert!(rl.check_at("big", 1.0, t + Duration::from_secs(8)).is_ok());
        // Small requests of another key are untouched by it.
        for _ in 0..9 {
            assert!(rl.check_at("small", cost_of(50), t).is_ok());
        }
        // The debt is bounded by the burst: a huge body costs at most `burst + 1` tokens of
        // waiting.
        assert!(rl.check_at("huge", cost_of(1 << 30), t).is_ok());
        let wait = rl.check_at("huge", 1.0, t).unwrap_err();
        assert_eq!(wait, Duration::from_secs(11));
    }
}
