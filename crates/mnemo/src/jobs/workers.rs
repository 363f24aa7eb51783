//! The worker tasks of this process: started on the current tokio runtime, each claiming and
//! running jobs until stopped (after the job it runs) or dropped (at once).

use crate::Memory;
use mnemo_core::JobRecord;
use std::sync::Arc;

impl Memory {
    /// Starts `n` worker tasks on the current tokio runtime; they run until the returned handle
    /// is stopped or dropped. A job a stopped worker was running is taken over after its lease.
    pub fn start_workers(&self, n: usize) -> JobWorkers {
        self.start_workers_with(n, Arc::new(|_: &JobRecord| {}))
    }

    /// [`Memory::start_workers`], calling `on_run` with each job a worker ran, as it stands
    /// after the run (for metrics).
    pub fn start_workers_with(&self, n: usize, on_run: OnJobRun) -> JobWorkers {
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let tasks = (0..n)
            .map(|i| {
                let (this, on_run, stopped) = (self.clone(), on_run.clone(), stopped.clone());
                let name = format!("{}-{i}", uuid::Uuid::now_v7());
                tokio::spawn(async move { this.work(&name, on_run, stopped).await })
            })
            .collect();
        JobWorkers { tasks, stop }
    }

    async fn work(
        &self,
        name: &str,
        on_run: OnJobRun,
        mut stop: tokio::sync::watch::Receiver<bool>,
    ) {
        loop {
            // Checked between jobs only: a job a worker has claimed runs to its end.
            if *stop.borrow() {
                return;
            }
            // Created before the claim, so a job enqueued meanwhile still wakes this worker.
            let ready = self.inner.job_ready.notified();
            match self.run_next_job(name).await {
                Ok(Some(job)) => {
                    on_run(&job);
                    continue;
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(error_kind = e.kind().as_str(), "job worker could not claim")
                }
            }
            // The timer only bounds how late a job of another process is seen.
            tokio::select! {
                _ = tokio::time::timeout(self.inner.jobs.poll, ready) => {}
                _ = stop.changed() => {}
            }
        }
    }
}

/// Called with each job a worker ran.
pub type OnJobRun = Arc<dyn Fn(&JobRecord) + Send + Sync>;

/// Worker tasks started by [`Memory::start_workers`]. [`JobWorkers::stop`] lets each finish
/// the job it is running (so none is left `running` under a lease nobody renews); dropping
/// this aborts them at once, and a job one was running is taken over after its lease.
#[derive(Debug)]
pub struct JobWorkers {
    tasks: Vec<tokio::task::JoinHandle<()>>,
    stop: tokio::sync::watch::Sender<bool>,
}

impl JobWorkers {
    /// Stops the workers after the job each is running, and waits for that. Jobs still
    /// pending stay queued for the next worker (of this process or another).
    pub async fn stop(mut self) {
        let _ = self.stop.send(true);
        for task in std::mem::take(&mut self.tasks) {
            let _ = task.await;
        }
    }

    pub fn len(&self) -> usize {
        self.tasks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }
}

impl Drop for JobWorkers {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}
