//! Running the plan: workers take planned tests in order, run each trial
//! and hand finished rows back as they complete; a semaphore bounds the
//! plugin calls in flight across all tests.

use super::*;

pub(super) struct Ctx<'a> {
    pub(super) suite: &'a Suite,
    pub(super) registry: &'a Registry,
    pub(super) targets: &'a Targets,
    pub(super) run_targets: &'a [RunTarget],
    pub(super) cli_threshold: Option<f64>,
    pub(super) graders: Semaphore,
    pub(super) stop: AtomicBool,
    pub(super) fail_fast: bool,
    pub(super) policy: crate::grants::Policy,
    pub(super) lifecycle: Option<Lifecycle>,
    pub(super) run_id: String,
    pub(super) cache: Option<crate::response_cache::ResponseCache>,
    /// The scope of cached answers (suite and sandbox mode).
    pub(super) cache_scope: String,
}

/// A target of this run, with its matrix hooks and its judge.
pub(super) struct RunTarget {
    pub(super) target: Target,
    pub(super) hooks: crate::workspace::Hooks,
    pub(super) judge: Result<Target, String>,
}

impl Ctx<'_> {
    pub(super) fn stopping(&self) -> bool {
        self.stop.load(Ordering::SeqCst) || INTERRUPTED.load(Ordering::SeqCst)
    }
}

/// Runs `plan` on `workers` threads, skipping rows in `done`, and hands each
/// new row to `sink` as it completes (on the calling thread).
pub(super) fn execute(
    ctx: &Ctx<'_>,
    plan: &[PlannedTest],
    done: &HashMap<(String, String, u32), RowBrief>,
    workers: usize,
    mut sink: impl FnMut(&ResultRow) -> anyhow::Result<()>,
) -> anyhow::Result<Vec<RowBrief>> {
    let suite: Arc<str> = ctx.suite.name.as_str().into();
    let target: Arc<str> = ctx
        .run_targets
        .first()
        .map_or("", |t| t.target.name.as_str())
        .into();
    let next = AtomicUsize::new(0);
    let (tx, rx) = mpsc::channel::<ResultRow>();
    let mut rows = Vec::new();
    std::thread::scope(|scope| -> anyhow::Result<()> {
        for _ in 0..workers.min(plan.len()).max(1) {
            let tx = tx.clone();
            let next = &next;
            scope.spawn(move || {
                while !ctx.stopping() {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(planned) = plan.get(i) else { break };
                    if !run_planned(ctx, planned, done, &tx) {
                        break;
                    }
                }
            });
        }
        drop(tx);
        for row in rx {
            sink(&row)?;
            rows.push(RowBrief::of(&row, &suite, &target));
        }
        Ok(())
    })?;
    Ok(rows)
}

/// Runs the trials of one planned test. False when the receiver is gone.
pub(super) fn run_planned(
    ctx: &Ctx<'_>,
    planned: &PlannedTest,
    done: &HashMap<(String, String, u32), RowBrief>,
    tx: &mpsc::Sender<ResultRow>,
) -> bool {
    let test = &ctx.suite.tests[planned.index];
    let mut finished: Vec<RowBrief> = Vec::new();
    let suite: Arc<str> = ctx.suite.name.as_str().into();
    for trial in 1..=planned.trials {
        let key = (
            test.id.clone(),
            ctx.run_targets[planned.target].target.name.clone(),
            trial,
        );
        if let Some(row) = done.get(&key) {
            finished.push(row.clone());
        } else {
            if ctx.stopping() {
                return true;
            }
            let row = run_trial(ctx, test, planned, trial);
            finished.push(RowBrief::of(&row, &suite, &suite));
            if tx.send(row).is_err() {
                return false;
            }
        }
        if planned.stop_at_first_pass
            && finished
                .last()
                .is_some_and(|r| r.execution_status() == ExecutionStatus::Ok)
        {
            break;
        }
    }
    if ctx.fail_fast {
        let refs: Vec<&RowBrief> = finished.iter().collect();
        if !refs.is_empty() && !outcome::combine(&refs).status.is_success() {
            ctx.stop.store(true, Ordering::SeqCst);
        }
    }
    true
}
