//! Prometheus metrics, served at `/metrics`: requests and latency by route and status, the
//! duration of each service operation (its store work included), model calls (embedding,
//! extraction, reconciliation) by purpose, and the time requests wait for a worker slot.

use prometheus_client::encoding::{text::encode, EncodeLabelSet};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RouteLabels {
    pub method: String,
    pub route: String,
    pub status: u16,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OpLabels {
    pub op: String,
    pub outcome: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ModelLabels {
    pub purpose: String,
    pub failed: String,
}

fn seconds_histogram() -> Histogram {
    // 100 µs … ~50 s.
    Histogram::new(exponential_buckets(0.0001, 2.5, 15))
}

/// All of the server's metric families.
pub struct Metrics {
    registry: Registry,
    pub requests: Family<RouteLabels, Counter>,
    pub request_seconds: Family<RouteLabels, Histogram, fn() -> Histogram>,
    pub op_seconds: Family<OpLabels, Histogram, fn() -> Histogram>,
    pub model_seconds: Family<ModelLabels, Histogram, fn() -> Histogram>,
    pub queue_seconds: Histogram,
    /// Operations whose client hung up before the answer (their work was cancelled).
    pub abandoned: Counter,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("mnemo");
        let requests = Family::<RouteLabels, Counter>::default();
        let request_seconds =
            Family::<RouteLabels, Histogram, fn() -> Histogram>::new_with_constructor(
                seconds_histogram,
            );
        let op_seconds = Family::<OpLabels, Histogram, fn() -> Histogram>::new_with_constructor(
            seconds_histogram,
        );
        let model_seconds =
            Family::<ModelLabels, Histogram, fn() -> Histogram>::new_with_constructor(
                seconds_histogram,
            );
        let queue_seconds = seconds_histogram();
        let abandoned = Counter::default();
        registry.register(
            "requests_abandoned",
            "Operations whose client hung up before the answer; their work is cancelled",
            abandoned.clone(),
        );
        registry.register(
            "http_requests",
            "HTTP requests by method, matched route and status",
            requests.clone(),
        );
        registry.register(
            "http_request_duration_seconds",
            "HTTP request latency by method, matched route and status",
            request_seconds.clone(),
        );
        registry.register(
            "operation_duration_seconds",
            "Service operations (store work included) by operation and outcome",
            op_seconds.clone(),
        );
        registry.register(
            "model_call_duration_seconds",
            "Embedder and chat model calls by purpose",
            model_seconds.clone(),
        );
        registry.register(
            "queue_delay_seconds",
            "Time a request waited for a worker slot before its operation started",
            queue_seconds.clone(),
        );
        Self {
            registry,
            requests,
            request_seconds,
            op_seconds,
            model_seconds,
            queue_seconds,
            abandoned,
        }
    }

    pub fn observe_request(&self, method: &str, route: &str, status: u16, seconds: f64) {
        let labels = RouteLabels {
            method: method.to_string(),
            route: route.to_string(),
            status,
        };
        self.requests.get_or_create(&labels).inc();
        self.request_seconds.get_or_create(&labels).observe(seconds);
    }

    pub fn observe_op(&self, op: &str, ok: bool, seconds: f64) {
        self.op_seconds
            .get_or_create(&OpLabels {
                op: op.to_string(),
                outcome: if ok { "ok" } else { "error" }.to_string(),
            })
            .observe(seconds);
    }

    pub fn observe_model(&self, calls: &[mnemo_core::ModelCall]) {
        for c in calls {
            self.model_seconds
                .get_or_create(&ModelLabels {
                    purpose: c.purpose.clone(),
                    failed: c.failed.to_string(),
                })
                .observe(c.ms / 1e3);
        }
    }

    /// The text exposition format.
    pub fn render(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = encode(&mut out, &self.registry);
        out
    }
}
