//! Prometheus metrics, served at `/metrics`: requests and latency by route and status, the
//! duration of each service operation (its store work included), model calls (embedding,
//! extraction, reconciliation) by purpose, and the time requests wait for a worker slot.

use prometheus_client::encoding::{text::encode, EncodeLabelSet};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;

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

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct JobLabels {
    pub status: String,
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
    /// Jobs in the store by status (refreshed when metrics are read).
    pub jobs: Family<JobLabels, Gauge>,
    /// Age of the oldest job not yet done or failed.
    pub jobs_oldest_open_seconds: Gauge<f64, AtomicU64>,
    /// Job runs by this server's workers, by the status each run left the job in.
    pub job_runs: Family<JobLabels, Counter>,
    /// Async adds refused because the queue was full.
    pub jobs_refused: Counter,
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
        let jobs = Family::<JobLabels, Gauge>::default();
        let jobs_oldest_open_seconds = Gauge::<f64, AtomicU64>::default();
        let job_runs = Family::<JobLabels, Counter>::default();
        let jobs_refused = Counter::default();
        registry.register(
            "jobs",
            "Background jobs in the store by status (pending and running make the queue depth)",
            jobs.clone(),
        );
        registry.register(
            "jobs_oldest_open_seconds",
            "Age of the oldest pending or running job, 0 when there is none",
            jobs_oldest_open_seconds.clone(),
        );
        registry.register(
            "job_runs",
            "Job runs by this server's workers, by the status each left its job in (pending: a retry is due)",
            job_runs.clone(),
        );
        registry.register(
            "jobs_refused",
            "Async adds refused with 429 because the queue was at its configured depth",
            jobs_refused.clone(),
        );
        Self {
            jobs,
            jobs_oldest_open_seconds,
            job_runs,
            jobs_refused,
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

    /// The queue as the store counts it now.
    pub fn observe_queue(&self, stats: &mnemo_core::QueueStats, now: mnemo_core::Timestamp) {
        for (status, n) in [
            ("pending", stats.pending),
            ("running", stats.running),
            ("done", stats.done),
            ("failed", stats.failed),
        ] {
            self.jobs
                .get_or_create(&JobLabels {
                    status: status.to_string(),
                })
                .set(i64::try_from(n).unwrap_or(i64::MAX));
        }
        let age = stats
            .oldest_open_at
            .map_or(0.0, |t| (now - t).num_milliseconds().max(0) as f64 / 1e3);
        self.jobs_oldest_open_seconds.set(age);
    }

    /// One job run, by the status it left the job in.
    pub fn observe_job(&self, job: &mnemo_core::JobRecord) {
        self.job_runs
            .get_or_create(&JobLabels {
                status: job.status.as_str().to_string(),
            })
            .inc();
    }

    /// The text exposition format.
    pub fn render(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = encode(&mut out, &self.registry);
        out
    }
}
