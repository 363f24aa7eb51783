//! A token bucket per API key: `per_minute` requests refill evenly, up to `burst` at once.

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

    /// Takes one token for `key`, or says how long until one is available.
    pub fn check(&self, key: &str) -> Result<(), Duration> {
        self.check_at(key, Instant::now())
    }

    fn check_at(&self, key: &str, now: Instant) -> Result<(), Duration> {
        if self.rate <= 0.0 {
            return Ok(());
        }
        let mut buckets = self.buckets.lock();
        let (tokens, last) = buckets.entry(key.to_string()).or_insert((self.burst, now));
        let elapsed = now.saturating_duration_since(*last).as_secs_f64();
        *tokens = (*tokens + elapsed * self.rate).min(self.burst);
        *last = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - *tokens) / self.rate))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_gets_its_burst_then_waits_and_keys_are_separate() {
        let rl = RateLimiter::new(60, 3);
        let t = Instant::now();
        for _ in 0..3 {
            assert!(rl.check_at("a", t).is_ok());
        }
        let wait = rl.check_at("a", t).unwrap_err();
        assert!(
            wait > Duration::ZERO && wait <= Duration::from_secs(1),
            "{wait:?}"
        );
        assert!(rl.check_at("b", t).is_ok());
        assert!(rl.check_at("a", t + Duration::from_secs(1)).is_ok());
        assert!(RateLimiter::new(0, 1).check("x").is_ok());
    }
}
