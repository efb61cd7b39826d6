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
    /// `depends_on`, as test indices, and what has finished.
    pub(super) dependencies: Dependencies,
    /// The targets' reported cost so far, in USD (for `budget_usd`).
    pub(super) spent: std::sync::Mutex<f64>,
    /// Where agents' transcripts are kept (`<run>/transcripts`).
    pub(super) transcripts: PathBuf,
    /// Under `--isolate`, the run's sandbox each case's is made from.
    pub(super) sandbox: Option<Arc<crate::isolate::RunSandbox>>,
}

/// The `depends_on` graph of a run and the (test, target) entries that have
/// finished, with whether each ended in an execution error. A worker whose
/// test depends on others waits here; the plan puts dependencies first, so
/// what it waits on has been started by another worker.
pub(super) struct Dependencies {
    /// The tests each test depends on, by index.
    of: Vec<Vec<usize>>,
    /// The (test, target) entries of this run's plan.
    planned: std::collections::HashSet<(usize, usize)>,
    finished: std::sync::Mutex<HashMap<(usize, usize), bool>>,
    changed: std::sync::Condvar,
}

impl Dependencies {
    pub(super) fn new(suite: &Suite, plan: &[PlannedTest]) -> Self {
        let of = crate::plan::dependency_indices(suite);
        let planned = if of.iter().any(|d| !d.is_empty()) {
            plan.iter().map(|p| (p.index, p.target)).collect()
        } else {
            Default::default()
        };
        Self {
            of,
            planned,
            finished: Default::default(),
            changed: Default::default(),
        }
    }

    /// Waits for the dependencies of `planned` (on its target) that this
    /// run plans (one left out by `--rerun-failed` passed before), and
    /// returns the ids of those that ended in an execution error; `None`
    /// when the run is stopping first.
    fn wait(&self, ctx: &Ctx<'_>, planned: &PlannedTest) -> Option<Vec<String>> {
        let deps: Vec<usize> = self.of[planned.index]
            .iter()
            .copied()
            .filter(|j| self.planned.contains(&(*j, planned.target)))
            .collect();
        let mut finished = self.finished.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if deps
                .iter()
                .all(|j| finished.contains_key(&(*j, planned.target)))
            {
                return Some(
                    deps.iter()
                        .filter(|j| finished[&(**j, planned.target)])
                        .map(|&j| ctx.suite.tests[j].id.clone())
                        .collect(),
                );
            }
            if ctx.stopping() {
                return None;
            }
            finished = self
                .changed
                .wait_timeout(finished, Duration::from_millis(100))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Records that `planned` finished, failed when every trial ended in
    /// an execution error.
    fn finish(&self, planned: &PlannedTest, rows: &[RowBrief]) {
        if self.planned.is_empty() {
            return;
        }
        let failed = !rows.is_empty()
            && rows
                .iter()
                .all(|r| r.execution_status() == ExecutionStatus::ExecutionError);
        self.finished
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert((planned.index, planned.target), failed);
        self.changed.notify_all();
    }
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
    // `depends_on`: wait for the dependencies; when one ended in an
    // execution error, an error row per trial instead of running (unless
    // `on_dependency_failure: run`).
    let mut failed_dependencies = Vec::new();
    if let Some(deps) = &test.depends_on {
        match ctx.dependencies.wait(ctx, planned) {
            Some(failed) => failed_dependencies = failed,
            None => return true,
        }
        if !failed_dependencies.is_empty()
            && deps.on_failure == crate::suite::model::DependencyPolicy::Run
        {
            failed_dependencies.clear();
        }
    }
    // `budget_usd`: once the reported cost reaches it, no test starts.
    let over_budget = ctx.suite.budget_usd.and_then(|budget| {
        let spent = *ctx.spent.lock().unwrap_or_else(|e| e.into_inner());
        (spent >= budget).then(|| format!("Suite budget exceeded (${spent:.4} / ${budget:.4})"))
    });
    // `trials.cost_limit_usd`: what this test's trials have cost so far.
    let mut spent_on_test = 0.0;
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
            let row = match &test.depends_on {
                _ if over_budget.is_some() => trial::not_started_row(
                    ctx,
                    test,
                    planned,
                    trial,
                    FailureClass::BudgetExceeded,
                    over_budget.clone().unwrap_or_default(),
                ),
                Some(deps) if !failed_dependencies.is_empty() => trial::dependency_failed_row(
                    ctx,
                    test,
                    planned,
                    trial,
                    &failed_dependencies,
                    deps.on_failure,
                ),
                _ => run_trial(ctx, test, planned, trial),
            };
            finished.push(RowBrief::of(&row, &suite, &suite));
            if let Some(cost) = row.cost_usd.filter(|c| c.is_finite() && *c > 0.0) {
                *ctx.spent.lock().unwrap_or_else(|e| e.into_inner()) += cost;
                spent_on_test += cost;
            }
            if tx.send(row).is_err() {
                ctx.stop.store(true, Ordering::SeqCst);
                return false;
            }
        }
        if planned
            .cost_limit_usd
            .is_some_and(|limit| spent_on_test >= limit)
        {
            break;
        }
        if planned.stop_at_first_pass
            && finished
                .last()
                .is_some_and(|r| r.execution_status() == ExecutionStatus::Ok)
        {
            break;
        }
    }
    ctx.dependencies.finish(planned, &finished);
    if ctx.fail_fast {
        let refs: Vec<&RowBrief> = finished.iter().collect();
        if !refs.is_empty() && !outcome::combine(&refs).status.is_success() {
            ctx.stop.store(true, Ordering::SeqCst);
        }
    }
    true
}
