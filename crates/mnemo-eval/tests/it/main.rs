//! mnemo-eval's integration tests, one binary: the correctness scenarios, the metrics and the
//! LoCoMo pipeline.

mod correctness;
mod metrics;
mod pipeline;
mod relations;
