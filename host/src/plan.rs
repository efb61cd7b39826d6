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
                    strategy: (count > 1).then_some(strategy),
                    stop_at_first_pass: stop && count > 1,
                })
        })
        .collect();
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
    Ok(match options.shard {
        Some(shard) => selected
            .into_iter()
            .enumerate()
            .filter(|(i, _)| *i as u32 % shard.count == shard.index - 1)
            .map(|(_, p)| p)
            .collect(),
        None => selected,
    })
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
