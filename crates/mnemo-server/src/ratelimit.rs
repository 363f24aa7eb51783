//! A token bucket per API key: `per_minute` tokens refill evenly, up to `burst` at once. A
//! request costs one token plus one for every [`BODY_BYTES_PER_TOKEN`] of its body, so a key
//! that sends large bodies (the work of embedding and indexing grows with the text) gets
//! proportionally fewer requests: its share of the server stays bounded by its rate, not by how
//! much it packs into each request. A request is let in while the key holds at least one token;
//! what it costs beyond that is taken as debt (at most `burst`), which the key's next requests
//! wait out.
//!
//! The body is only what a request asks for; what it takes is the time its work runs. When the
//! work ends (or stops after its client hung up), the key is charged one more token for each
//! `work_ms` milliseconds it ran beyond the first [`FREE_WORK_SHARES`] × `work_ms`
//! ([`RateLimiter::charge_work`]), also as debt. A key sending cheap-looking requests that run long — a context pack over a large scope,
//! abandoned after 0.3 s, costs its server the same CPU as one answered — pays for that time, so
//! a key's share of the server's time is bounded by `rate × work_ms`, not by its request count.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::time::{Duration, Instant};

#[derive(Debug)]
pub struct RateLimiter {
    /// Tokens per second; 0 turns limiting off.
    rate: f64,
    burst: f64,
    /// Work time one token pays for; zero leaves work unpriced.
    work_per_token: Duration,
    buckets: Mutex<HashMap<String, (f64, Instant)>>,
}

impl RateLimiter {
    /// A limiter of `per_minute` tokens per key, `burst` at once; work is not priced.
    pub fn new(per_minute: u32, burst: u32) -> Self {
        Self::with_work_price(per_minute, burst, 0)
    }

    /// A limiter that also charges a token for each `work_ms` of a request's work beyond its first
    /// [`FREE_WORK_SHARES`] × `work_ms` (0: work is not priced).
    pub fn with_work_price(per_minute: u32, burst: u32, work_ms: u32) -> Self {
        Self {
            rate: f64::from(per_minute) / 60.0,
            burst: f64::from(burst.max(1)),
            work_per_token: Duration::from_millis(u64::from(work_ms)),
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// Whether [`charge_work`](Self::charge_work) can charge anything.
    pub fn prices_work(&self) -> bool {
        self.rate > 0.0 && !self.work_per_token.is_zero()
    }

    /// Charges `key` for work that ran `worked`: [`work_cost`] tokens, taken as debt (at most
    /// `burst`); never refuses, the key's next requests wait the debt out.
    pub fn charge_work(&self, key: &str, worked: Duration) {
        let cost = work_cost(worked, self.work_per_token);
        if cost > 0.0 && self.rate > 0.0 {
            self.take(key, cost, Instant::now());
        }
    }

    /// Refills `key`'s bucket up to `now` and takes `cost` from it, down to `-burst`.
    fn take(&self, key: &str, cost: f64, now: Instant) {
        let mut buckets = self.buckets.lock();
        let (tokens, last) = buckets.entry(key.to_string()).or_insert((self.burst, now));
        let elapsed = now.saturating_duration_since(*last).as_secs_f64();
        *tokens = ((*tokens + elapsed * self.rate).min(self.burst) - cost).max(-self.burst);
        *last = now;
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

/// Work a request does within its own price, in units of `work_ms`: a typical add or search
/// (well under 50 ms at the default) costs one token, as before work was priced.
pub const FREE_WORK_SHARES: u32 = 5;

/// What work that ran `worked` costs beyond its request's price: one token per `per_token` after
/// the first [`FREE_WORK_SHARES`] of them (in fractions); nothing when `per_token` is zero.
pub fn work_cost(worked: Duration, per_token: Duration) -> f64 {
    if per_token.is_zero() {
        return 0.0;
    }
    let free = per_token * FREE_WORK_SHARES;
    worked.saturating_sub(free).as_secs_f64() / per_token.as_secs_f64()
}

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

    #[test]
    fn work_is_priced_past_its_first_share_and_charged_as_debt() {
        let ms = Duration::from_millis;
        assert_eq!(work_cost(ms(5), ms(10)), 0.0);
        assert_eq!(work_cost(ms(50), ms(10)), 0.0);
        assert!((work_cost(ms(310), ms(10)) - 26.0).abs() < 1e-9);
        assert_eq!(work_cost(ms(10_000), Duration::ZERO), 0.0);
        // One a second, burst 10, a token per 10 ms of work.
        let rl = RateLimiter::with_work_price(60, 10, 10);
        assert!(rl.prices_work());
        assert!(!RateLimiter::new(60, 10).prices_work());
        assert!(!RateLimiter::with_work_price(0, 10, 10).prices_work());
        // A request that costs one token but works 100 ms leaves the key 5 tokens lighter.
        let t = Instant::now();
        assert!(rl.check_at("slow", 1.0, t).is_ok());
        rl.take("slow", work_cost(ms(100), ms(10)), t);
        for _ in 0..4 {
            assert!(rl.check_at("slow", 1.0, t).is_ok());
        }
        assert!(rl.check_at("slow", 1.0, t).is_err());
        // Long work leaves at most `burst` of debt; a key that did no work is untouched.
        rl.charge_work("long", Duration::from_secs(3600));
        let wait = rl.check_request("long", 0).unwrap_err();
        assert!(wait > Duration::from_secs(10), "{wait:?}");
        assert!(wait <= Duration::from_secs(11), "{wait:?}");
        assert!(rl.check_request("idle", 0).is_ok());
        // Unpriced work charges nothing.
        let free = RateLimiter::new(60, 1);
        free.charge_work("k", Duration::from_secs(3600));
        assert!(free.check_request("k", 0).is_ok());
    }
}
