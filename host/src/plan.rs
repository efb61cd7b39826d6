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

/// The schedulers `--shard auto` reads a slice from, in the order asked:
/// the innermost first (a Slurm job submitted from a CI job inherits the
/// CI job's variables).
const ENGINES: &[&str] = &[
    "a Slurm job array (SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_MIN, SLURM_ARRAY_TASK_COUNT)",
    "a Kubernetes Indexed Job (JOB_COMPLETION_INDEX, with the count from --shard auto/N or EVALHOST_SHARD_COUNT)",
    "GitLab CI `parallel:` (CI_NODE_INDEX, CI_NODE_TOTAL)",
    "Buildkite `parallelism:` (BUILDKITE_PARALLEL_JOB, BUILDKITE_PARALLEL_JOB_COUNT)",
    "CircleCI `parallelism:` (CIRCLE_NODE_INDEX, CIRCLE_NODE_TOTAL)",
];

/// CI systems' parallel jobs, after Slurm and Kubernetes in [`ENGINES`]:
/// (system, its word for it, the index variable, the count variable, the
/// first index).
const CI_PARALLEL: &[(&str, &str, &str, &str, u32)] = &[
    (
        "GitLab",
        "CI `parallel:`",
        "CI_NODE_INDEX",
        "CI_NODE_TOTAL",
        1,
    ),
    (
        "Buildkite",
        "`parallelism:`",
        "BUILDKITE_PARALLEL_JOB",
        "BUILDKITE_PARALLEL_JOB_COUNT",
        0,
    ),
    (
        "CircleCI",
        "`parallelism:`",
        "CIRCLE_NODE_INDEX",
        "CIRCLE_NODE_TOTAL",
        0,
    ),
];

impl Shard {
    /// `--shard auto` or `--shard auto/N`: the slice this process is, read
    /// from the scheduler that started it ([`ENGINES`]); with the
    /// scheduler's own words for it, to print. `var` reads a variable (the
    /// process environment, in a test a map). No scheduler's variables is
    /// an error, never shard 1/1.
    pub fn from_env(
        spec: &str,
        var: &dyn Fn(&str) -> Option<String>,
    ) -> Result<(Self, String), String> {
        let given = match spec.trim().strip_prefix("auto") {
            Some("") => None,
            Some(rest) => {
                let n = rest.strip_prefix('/').ok_or_else(|| {
                    format!("--shard takes K/N, `auto` or `auto/N`, got `{spec}`")
                })?;
                match n.trim().parse::<u32>() {
                    Ok(n) if n > 0 => Some(n),
                    _ => {
                        return Err(format!(
                            "--shard auto/N: `{n}` is not a count of shards (1 or more)"
                        ));
                    }
                }
            }
            None => {
                return Err(format!(
                    "--shard takes K/N, `auto` or `auto/N`, got `{spec}`"
                ));
            }
        };
        let number = |name: &str| -> Result<Option<u32>, String> {
            match var(name) {
                None => Ok(None),
                Some(v) if v.trim().is_empty() => Ok(None),
                Some(v) => v
                    .trim()
                    .parse::<u32>()
                    .map(Some)
                    .map_err(|_| format!("--shard auto: {name}=`{v}` is not a number")),
            }
        };
        let said = |names: &[&str]| -> String {
            names
                .iter()
                .filter_map(|n| var(n).map(|v| format!("{n}={v}")))
                .collect::<Vec<_>>()
                .join(", ")
        };
        // (index 0-based, count, where)
        let found: Option<(u32, u32, String)> = if let Some(id) = number("SLURM_ARRAY_TASK_ID")? {
            let min = number("SLURM_ARRAY_TASK_MIN")?.unwrap_or(0);
            let step = number("SLURM_ARRAY_TASK_STEP")?.unwrap_or(1).max(1);
            let count = number("SLURM_ARRAY_TASK_COUNT")?.ok_or(
                "--shard auto: this Slurm array task does not say how many tasks its array has (SLURM_ARRAY_TASK_COUNT is not set; Slurm sets it from version 18.08)\n  hint: give the slice as --shard $SLURM_ARRAY_TASK_ID/N",
            )?;
            let names = [
                "SLURM_ARRAY_TASK_ID",
                "SLURM_ARRAY_TASK_MIN",
                "SLURM_ARRAY_TASK_MAX",
                "SLURM_ARRAY_TASK_STEP",
                "SLURM_ARRAY_TASK_COUNT",
            ];
            let contiguous = id >= min
                && (id - min) % step == 0
                && number("SLURM_ARRAY_TASK_MAX")?.is_none_or(|max| {
                    max >= min && ((max - min) / step).checked_add(1) == Some(count)
                });
            if !contiguous {
                return Err(format!(
                    "--shard auto: this Slurm array's task ids are not one range ({}), so a task's place in it is unknown\n  hint: submit the array as --array=1-N (a `%` limit is fine), or give the slice as --shard K/N",
                    said(&names)
                ));
            }
            Some((
                (id - min) / step,
                count,
                format!("the Slurm job array ({})", said(&names)),
            ))
        } else if let Some(index) = number("JOB_COMPLETION_INDEX")? {
            let count = match given {
                Some(n) => Some(n),
                None => number("EVALHOST_SHARD_COUNT")?,
            }
            .ok_or(format!(
                "--shard auto: a Kubernetes Indexed Job gives this pod's index (JOB_COMPLETION_INDEX={index}) but not how many there are\n  hint: give the Job's `completions` as --shard auto/N, or set EVALHOST_SHARD_COUNT"
            ))?;
            let mut names = vec!["JOB_COMPLETION_INDEX"];
            if given.is_none() {
                names.push("EVALHOST_SHARD_COUNT");
            }
            Some((
                index,
                count,
                format!("the Kubernetes Indexed Job ({})", said(&names)),
            ))
        } else {
            let mut found = None;
            for &(system, what, index_var, count_var, first) in CI_PARALLEL {
                let Some(index) = number(index_var)? else {
                    continue;
                };
                let count = number(count_var)?.ok_or(format!(
                    "--shard auto: {index_var} is set but {count_var} is not"
                ))?;
                if index < first {
                    return Err(format!(
                        "--shard auto: {index_var}={index}, but {system} numbers parallel jobs from {first}"
                    ));
                }
                found = Some((
                    index - first,
                    count,
                    format!("{system} {what} ({})", said(&[index_var, count_var])),
                ));
                break;
            }
            found
        };
        let Some((index, count, from)) = found else {
            let slurm_job = var("SLURM_JOB_ID").is_some();
            return Err(format!(
                "--shard auto: no scheduler says which shard this is{}; it reads {}\n  hint: give the slice as --shard K/N",
                if slurm_job {
                    " (this Slurm job is not an array: submit it with sbatch --array=1-N)"
                } else {
                    ""
                },
                ENGINES.join("; ")
            ));
        };
        if let Some(n) = given
            && n != count
        {
            return Err(format!(
                "--shard auto/{n}: {from} says there are {count} shards, not {n}"
            ));
        }
        if count == 0 || index >= count {
            return Err(format!(
                "--shard auto: {from} makes this shard {} of {count}, which is not a slice (1 ≤ K ≤ N)",
                u64::from(index) + 1
            ));
        }
        let shard = Self {
            index: index + 1,
            count,
        };
        Ok((shard, format!("shard {shard} from {from}")))
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
            .filter(|p| p.shard_key as u64 % u64::from(shard.count) == u64::from(shard.index - 1))
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

    fn auto(spec: &str, vars: &[(&str, &str)]) -> Result<(Shard, String), String> {
        let vars: std::collections::HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        Shard::from_env(spec, &|name| vars.get(name).cloned())
    }

    fn shard(index: u32, count: u32) -> Shard {
        Shard { index, count }
    }

    #[test]
    fn shard_auto_reads_each_scheduler() {
        // Slurm arrays: from 1, from 0, with a step; the task's place.
        let slurm = |id: &str, min: &str, max: &str, step: &str, count: &str| {
            auto(
                "auto",
                &[
                    ("SLURM_JOB_ID", "77"),
                    ("SLURM_ARRAY_TASK_ID", id),
                    ("SLURM_ARRAY_TASK_MIN", min),
                    ("SLURM_ARRAY_TASK_MAX", max),
                    ("SLURM_ARRAY_TASK_STEP", step),
                    ("SLURM_ARRAY_TASK_COUNT", count),
                ],
            )
        };
        let (s, from) = slurm("3", "1", "4", "1", "4").unwrap();
        assert_eq!(s, shard(3, 4));
        assert!(
            from.starts_with(
                "shard 3/4 from the Slurm job array (SLURM_ARRAY_TASK_ID=3, SLURM_ARRAY_TASK_MIN=1"
            ),
            "{from}"
        );
        assert_eq!(slurm("0", "0", "7", "1", "8").unwrap().0, shard(1, 8));
        assert_eq!(slurm("12", "0", "12", "4", "4").unwrap().0, shard(4, 4));
        // A list of ids that is not one range is refused, as is an id off the step.
        let err = slurm("5", "1", "9", "1", "3").unwrap_err();
        assert!(
            err.contains("not one range") && err.contains("--array=1-N"),
            "{err}"
        );
        assert!(slurm("2", "0", "12", "4", "4").is_err());
        // Kubernetes: the count from the flag or a variable.
        assert_eq!(
            auto("auto/5", &[("JOB_COMPLETION_INDEX", "4")]).unwrap().0,
            shard(5, 5)
        );
        assert_eq!(
            auto(
                "auto",
                &[("JOB_COMPLETION_INDEX", "0"), ("EVALHOST_SHARD_COUNT", "3")]
            )
            .unwrap()
            .0,
            shard(1, 3)
        );
        let err = auto("auto", &[("JOB_COMPLETION_INDEX", "0")]).unwrap_err();
        assert!(
            err.contains("--shard auto/N") && err.contains("EVALHOST_SHARD_COUNT"),
            "{err}"
        );
        assert!(auto("auto/2", &[("JOB_COMPLETION_INDEX", "2")]).is_err());
        // GitLab counts from 1; Buildkite and CircleCI from 0.
        assert_eq!(
            auto("auto", &[("CI_NODE_INDEX", "2"), ("CI_NODE_TOTAL", "3")])
                .unwrap()
                .0,
            shard(2, 3)
        );
        assert_eq!(
            auto(
                "auto",
                &[
                    ("BUILDKITE_PARALLEL_JOB", "2"),
                    ("BUILDKITE_PARALLEL_JOB_COUNT", "3")
                ]
            )
            .unwrap()
            .0,
            shard(3, 3)
        );
        assert_eq!(
            auto(
                "auto",
                &[("CIRCLE_NODE_INDEX", "0"), ("CIRCLE_NODE_TOTAL", "2")]
            )
            .unwrap()
            .0,
            shard(1, 2)
        );
        // The innermost scheduler wins: a Slurm task submitted from GitLab.
        let (s, from) = auto(
            "auto",
            &[
                ("CI_NODE_INDEX", "1"),
                ("CI_NODE_TOTAL", "2"),
                ("SLURM_ARRAY_TASK_ID", "2"),
                ("SLURM_ARRAY_TASK_MIN", "1"),
                ("SLURM_ARRAY_TASK_COUNT", "2"),
            ],
        )
        .unwrap();
        assert_eq!(s, shard(2, 2));
        assert!(from.contains("Slurm"), "{from}");
    }

    #[test]
    fn shard_auto_without_a_scheduler_or_with_nonsense_is_an_error() {
        let err = auto("auto", &[]).unwrap_err();
        assert!(
            err.contains("no scheduler says which shard this is"),
            "{err}"
        );
        assert!(
            err.contains("SLURM_ARRAY_TASK_ID") && err.contains("CI_NODE_INDEX"),
            "{err}"
        );
        assert!(err.contains("hint: give the slice as --shard K/N"), "{err}");
        let err = auto("auto", &[("SLURM_JOB_ID", "9")]).unwrap_err();
        assert!(err.contains("not an array"), "{err}");
        let err = auto("auto", &[("CI_NODE_INDEX", "two"), ("CI_NODE_TOTAL", "3")]).unwrap_err();
        assert!(err.contains("CI_NODE_INDEX=`two` is not a number"), "{err}");
        assert!(auto("auto", &[("CI_NODE_INDEX", "0"), ("CI_NODE_TOTAL", "3")]).is_err());
        assert!(
            auto(
                "auto",
                &[("CIRCLE_NODE_INDEX", "3"), ("CIRCLE_NODE_TOTAL", "3")]
            )
            .is_err()
        );
        assert!(
            auto(
                "automatic",
                &[("CI_NODE_INDEX", "1"), ("CI_NODE_TOTAL", "1")]
            )
            .is_err()
        );
        assert!(auto("auto/0", &[("JOB_COMPLETION_INDEX", "0")]).is_err());
        let err = auto("auto", &[("SLURM_ARRAY_TASK_ID", "1")]).unwrap_err();
        assert!(err.contains("SLURM_ARRAY_TASK_COUNT"), "{err}");
    }

    #[test]
    fn shard_auto_at_the_edge_of_u32_is_an_error_not_an_overflow() {
        // `(max - min) / step + 1` overflowed (a panic in a debug build).
        let err = auto(
            "auto",
            &[
                ("SLURM_ARRAY_TASK_ID", "0"),
                ("SLURM_ARRAY_TASK_MAX", "4294967295"),
                ("SLURM_ARRAY_TASK_COUNT", "0"),
            ],
        )
        .unwrap_err();
        assert!(err.contains("not one range"), "{err}");
        // `index + 1` in the message, for the last index there is.
        let err = auto("auto/3", &[("JOB_COMPLETION_INDEX", "4294967295")]).unwrap_err();
        assert!(err.contains("shard 4294967296 of 3"), "{err}");
    }
}
