//! The plan of a run: which tests, how many trials each, and which shard.
//! Filters (`--test-id` globs, `--tag`) are ORs within each kind and ANDed
//! across kinds; `--shard K/N` keeps every N-th planned test starting at the
//! K-th, so the slices are disjoint, cover the plan, and are the same on
//! every machine.

use std::fmt;
use std::str::FromStr;

use globset::{Glob, GlobMatcher};

use crate::suite::Suite;
use crate::suite::model::Strategy;

/// One test to run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlannedTest {
    /// Index into `suite.tests`.
    pub index: usize,
    /// Index into the run's targets.
    pub target: usize,
    /// How many trials.
    pub trials: u32,
    /// How they combine (`None` for a single run).
    pub strategy: Option<Strategy>,
    /// Whether to stop after the first passing trial (`pass_at_k`, not
    /// `--repeat`).
    pub stop_at_first_pass: bool,
    /// `trials.cost_limit_usd`: no further trial starts once the test's
    /// trials cost this much.
    pub cost_limit_usd: Option<f64>,
    /// What `--shard` slices by: the entry's position in the plan, or for a
    /// test in a `depends_on` group, the position of the group's first
    /// entry on the same target, so that a shard holds whole groups.
    pub shard_key: usize,
}

/// `--shard K/N`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// 1-based index.
    pub index: u32,
    /// Number of shards.
    pub count: u32,
}

impl FromStr for Shard {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (k, n) = s
            .split_once('/')
            .ok_or_else(|| format!("--shard takes K/N (like 2/5), got `{s}`"))?;
        let index: u32 = k
            .trim()
            .parse()
            .map_err(|_| format!("--shard: `{k}` is not a number"))?;
        let count: u32 = n
            .trim()
            .parse()
            .map_err(|_| format!("--shard: `{n}` is not a number"))?;
        if count == 0 || index == 0 || index > count {
            return Err(format!("--shard K/N needs 1 ≤ K ≤ N, got {index}/{count}"));
        }
        Ok(Self { index, count })
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// What to select and how often to run it.
#[derive(Debug, Clone, Default)]
pub struct PlanOptions {
    /// `--test-id` globs.
    pub test_ids: Vec<String>,
    /// `--tag` values.
    pub tags: Vec<String>,
    /// `--repeat N`.
    pub repeat: Option<u32>,
    /// `--shard K/N`.
    pub shard: Option<Shard>,
    /// Only these test ids (from `--rerun-failed`).
    pub only: Option<Vec<String>>,
}

/// What a filter that matched nothing may have meant: the nearest test
/// ids (and the glob that would match a part of an id), the suite's tags.
fn suggestions(suite: &Suite, options: &PlanOptions) -> String {
    let mut hints = Vec::new();
    for pattern in &options.test_ids {
        let ids = || suite.tests.iter().map(|t| t.id.as_str());
        if let Some(near) = crate::diag::nearest(pattern, ids()) {
            hints.push(format!("did you mean --test-id {near}?"));
        } else if !pattern.contains(['*', '?', '[']) {
            let n = ids().filter(|id| id.contains(pattern.as_str())).count();
            if n > 0 {
                hints.push(format!(
                    "--test-id matches whole ids: --test-id '*{pattern}*' matches {n} test(s)"
                ));
            }
        }
    }
    if !options.tags.is_empty() {
        let mut tags: Vec<&str> = suite
            .tests
            .iter()
            .flat_map(|t| t.tags.iter().map(String::as_str))
            .collect();
        tags.sort_unstable();
        tags.dedup();
        for tag in &options.tags {
            if let Some(near) = crate::diag::nearest(tag, tags.iter().copied()) {
                hints.push(format!("did you mean --tag {near}?"));
            }
        }
        hints.push(if tags.is_empty() {
            "the suite's tests have no tags (`tags: [...]` on a test or on the suite)".to_owned()
        } else {
            format!("the suite's tags: {}", tags.join(", "))
        });
    }
    if hints.is_empty() {
        String::new()
    } else {
        format!("\n  hint: {}", hints.join("\n  hint: "))
    }
}

/// Plans `suite` against `targets` (names, in order): every selected test
/// on each target (a test's own `execution.targets` narrows it). An error
/// when the filters select nothing.
pub fn plan(
    suite: &Suite,
    targets: &[String],
    options: &PlanOptions,
) -> Result<Vec<PlannedTest>, String> {
    let globs: Vec<GlobMatcher> = options
        .test_ids
        .iter()
        .map(|g| {
            Glob::new(g)
                .map(|g| g.compile_matcher())
                .map_err(|e| format!("--test-id `{g}` is not a valid glob: {e}"))
        })
        .collect::<Result<_, _>>()?;
    let (count, strategy, stop) = match (options.repeat, suite.trials) {
        (Some(n), trials) => (n, trials.map_or(Strategy::Mean, |t| t.strategy), false),
        (None, Some(t)) => (t.count, t.strategy, t.strategy == Strategy::PassAtK),
        (None, None) => (1, Strategy::PassAtK, false),
    };
    let selected: Vec<PlannedTest> = suite
        .tests
        .iter()
        .enumerate()
        .filter(|(_, t)| globs.is_empty() || globs.iter().any(|g| g.is_match(&t.id)))
        .filter(|(_, t)| {
            options.tags.is_empty() || options.tags.iter().any(|tag| t.tags.contains(tag))
        })
        .filter(|(_, t)| options.only.as_ref().is_none_or(|ids| ids.contains(&t.id)))
        .flat_map(|(index, t)| {
            targets
                .iter()
                .enumerate()
                .filter(move |(_, name)| t.targets.as_ref().is_none_or(|own| own.contains(name)))
                .map(move |(target, _)| PlannedTest {
                    index,
                    target,
                    trials: count,
                    // A test judged by promptfoo's rule stays judged by it
                    // over trials: each must pass (docs/dialects.md).
                    strategy: (count > 1).then_some(
                        if t.pass_rule == crate::suite::PassRule::AllPass {
                            Strategy::AllPass
                        } else {
                            strategy
                        },
                    ),
                    stop_at_first_pass: stop
                        && count > 1
                        && t.pass_rule != crate::suite::PassRule::AllPass,
                    cost_limit_usd: suite
                        .trials
                        .and_then(|t| t.cost_limit_usd)
                        .filter(|_| count > 1),
                    shard_key: 0,
                })
        })
        .collect();
    let mut selected = order_by_dependencies(suite, selected, &globs, &options.tags)?;
    if selected.is_empty() && (!options.test_ids.is_empty() || !options.tags.is_empty()) {
        let mut what = Vec::new();
        if !options.test_ids.is_empty() {
            what.push(format!("--test-id {}", options.test_ids.join(", ")));
        }
        if !options.tags.is_empty() {
            what.push(format!("--tag {}", options.tags.join(", ")));
        }
        return Err(format!(
            "no test matches {} (the suite has {} tests){}",
            what.join(" and "),
            suite.tests.len(),
            suggestions(suite, options)
        ));
    }
    assign_shard_keys(suite, &mut selected);
    Ok(match options.shard {
        Some(shard) => selected
            .into_iter()
            .filter(|p| p.shard_key as u32 % shard.count == shard.index - 1)
            .collect(),
        None => selected,
    })
}

/// The index of every test a test depends on (ids the loader checked).
pub fn dependency_indices(suite: &Suite) -> Vec<Vec<usize>> {
    if suite.tests.iter().all(|t| t.depends_on.is_none()) {
        return vec![Vec::new(); suite.tests.len()];
    }
    let index: std::collections::HashMap<&str, usize> = suite
        .tests
        .iter()
        .enumerate()
        .map(|(i, t)| (t.id.as_str(), i))
        .collect();
    suite
        .tests
        .iter()
        .map(|t| {
            t.depends_on.as_ref().map_or_else(Vec::new, |d| {
                d.ids
                    .iter()
                    .filter_map(|id| index.get(id.as_str()).copied())
                    .collect()
            })
        })
        .collect()
}

/// Puts every test after the tests it depends on (stable: otherwise in
/// suite order), so that workers taking the plan in order never wait on a
/// test no one has started. A dependency that `--test-id` or `--tag` leaves
/// out is an error (AgentV refuses it too); one left out by
/// `--rerun-failed` passed before and is not waited for.
fn order_by_dependencies(
    suite: &Suite,
    selected: Vec<PlannedTest>,
    globs: &[GlobMatcher],
    tags: &[String],
) -> Result<Vec<PlannedTest>, String> {
    let deps = dependency_indices(suite);
    if deps.iter().all(Vec::is_empty) {
        return Ok(selected);
    }
    let filtered = |t: &crate::suite::TestCase| {
        (globs.is_empty() || globs.iter().any(|g| g.is_match(&t.id)))
            && (tags.is_empty() || tags.iter().any(|tag| t.tags.contains(tag)))
    };
    let planned: std::collections::BTreeSet<usize> = selected.iter().map(|p| p.index).collect();
    for &i in &planned {
        for &j in &deps[i] {
            if !filtered(&suite.tests[j]) {
                return Err(format!(
                    "test `{}` depends on `{}`, which --test-id/--tag leave out: select it too",
                    suite.tests[i].id, suite.tests[j].id
                ));
            }
        }
    }
    // Kahn's algorithm over the planned tests, smallest suite index first.
    let mut waiting: std::collections::HashMap<usize, usize> = planned
        .iter()
        .map(|&i| (i, deps[i].iter().filter(|j| planned.contains(j)).count()))
        .collect();
    let mut ready: std::collections::BTreeSet<usize> = waiting
        .iter()
        .filter(|(_, n)| **n == 0)
        .map(|(i, _)| *i)
        .collect();
    let mut dependents: std::collections::HashMap<usize, Vec<usize>> = Default::default();
    for &i in &planned {
        for &j in deps[i].iter().filter(|j| planned.contains(j)) {
            dependents.entry(j).or_default().push(i);
        }
    }
    let mut order = Vec::with_capacity(planned.len());
    while let Some(i) = ready.pop_first() {
        order.push(i);
        for &k in dependents.get(&i).into_iter().flatten() {
            let n = waiting.get_mut(&k).expect("planned");
            *n -= 1;
            if *n == 0 {
                ready.insert(k);
            }
        }
    }
    let rank: std::collections::HashMap<usize, usize> =
        order.iter().enumerate().map(|(r, &i)| (i, r)).collect();
    let mut selected = selected;
    // Stable: a test's targets stay in their order.
    selected.sort_by_key(|p| rank.get(&p.index).copied().unwrap_or(usize::MAX));
    Ok(selected)
}

/// Sets each entry's `shard_key`: its position, or the position of the first
/// entry on the same target of its `depends_on` group. The tests of one
/// comparison (`select-best`) share one key on every target: a comparison
/// sees all its outputs, so its rows run in one shard.
fn assign_shard_keys(suite: &Suite, plan: &mut [PlannedTest]) {
    let deps = dependency_indices(suite);
    let compared =
        |t: &crate::suite::TestCase| t.compare_group.is_some() && !t.comparisons.is_empty();
    if deps.iter().all(Vec::is_empty) && !suite.tests.iter().any(compared) {
        for (i, p) in plan.iter_mut().enumerate() {
            p.shard_key = i;
        }
        return;
    }
    // Union-find over tests: a group is a connected part of the graph.
    let mut parent: Vec<usize> = (0..suite.tests.len()).collect();
    fn root(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    for (i, ds) in deps.iter().enumerate() {
        for &j in ds {
            let (a, b) = (root(&mut parent, i), root(&mut parent, j));
            parent[a] = b;
        }
    }
    let mut comparison: std::collections::HashMap<&str, usize> = Default::default();
    for (i, t) in suite.tests.iter().enumerate().filter(|(_, t)| compared(t)) {
        let group = t.compare_group.as_deref().unwrap_or_default();
        let j = *comparison.entry(group).or_insert(i);
        let (a, b) = (root(&mut parent, i), root(&mut parent, j));
        parent[a] = b;
    }
    let across: std::collections::HashSet<usize> = (0..suite.tests.len())
        .filter(|&i| compared(&suite.tests[i]))
        .map(|i| root(&mut parent, i))
        .collect();
    let mut first: std::collections::HashMap<(usize, usize), usize> = Default::default();
    for (position, p) in plan.iter_mut().enumerate() {
        let group = root(&mut parent, p.index);
        let target = if across.contains(&group) {
            usize::MAX
        } else {
            p.target
        };
        p.shard_key = *first.entry((group, target)).or_insert(position);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_parse_and_refuse_nonsense() {
        assert_eq!("2/3".parse::<Shard>(), Ok(Shard { index: 2, count: 3 }));
        for bad in ["0/3", "4/3", "1/0", "x/2", "3"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
    }
}
