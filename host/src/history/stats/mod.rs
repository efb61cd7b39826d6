//! Paired statistics behind `evalhost compare BASE CAND` and `evalhost trend`.
//!
//! `compare` works on tests matched by `(test_id, target)` between a base run
//! and a candidate run. Each side of a match holds one or more trials,
//! each with a score in `[0, 1]` and a pass/fail verdict (an errored trial is a
//! fail with score 0, see [`Side::push_error`]).
//!
//! - [`test_delta`] reduces one matched test to a [`TestDelta`]: mean scores,
//!   pass rates, majority verdicts, the verdict flip, and AgentV's per-test
//!   win/loss/tie outcome and normalized gain.
//! - [`summarize`] aggregates the deltas into a [`Summary`]: counts, means, a
//!   trial-aware paired bootstrap interval of the mean delta, an exact McNemar
//!   test on verdict flips, an exact sign test on score deltas, and a verdict.
//! - [`series`] describes one test across many runs for `trend`: flaps,
//!   flakiness, least-squares slope and drift.
//!
//! Everything is deterministic: the bootstrap draws from
//! `StdRng::seed_from_u64(seed)` and reports the seed it used.

use rand::rngs::StdRng;
use rand::{Rng as _, SeedableRng as _};
use serde::Serialize;

/// AgentV's default `--threshold` for win/loss classification (`agentv compare`
/// uses `threshold ?? 0.1`); see [`classify_outcome`].
pub const WIN_LOSS_THRESHOLD: f64 = 0.1;

/// Deltas with an absolute value at or below this are ties for the sign test.
pub const ZERO_DELTA_EPSILON: f64 = 1e-9;

/// A test is [`Series::flaky`] when its verdict changed at least this many times.
pub const FLAKY_MIN_FLAPS: usize = 2;

/// Fewest scored runs for which [`Series::slope`] is computed.
pub const SLOPE_MIN_POINTS: usize = 3;

/// Least absolute least-squares slope (score per run) for [`Series::drift`].
pub const DRIFT_MIN_SLOPE: f64 = 0.05;

/// Least absolute change from the first to the last scored run for
/// [`Series::drift`] (the change must be strictly larger).
pub const DRIFT_MIN_CHANGE: f64 = 0.1;

/// [`TestDelta::flip`] when the majority verdict went from pass to fail.
pub const FLIP_PASS_TO_FAIL: &str = "pass->fail";
/// [`TestDelta::flip`] when the majority verdict went from fail to pass.
pub const FLIP_FAIL_TO_PASS: &str = "fail->pass";

/// [`TestDelta::outcome`]: the candidate gained at least the threshold.
pub const OUTCOME_WIN: &str = "win";
/// [`TestDelta::outcome`]: the candidate lost at least the threshold.
pub const OUTCOME_LOSS: &str = "loss";
/// [`TestDelta::outcome`]: the change was smaller than the threshold.
pub const OUTCOME_TIE: &str = "tie";

/// [`Summary::verdict`] for a significant drop.
pub const VERDICT_REGRESSED: &str = "regressed";
/// [`Summary::verdict`] for a significant gain.
pub const VERDICT_IMPROVED: &str = "improved";
/// [`Summary::verdict`] when the change is not significant.
pub const VERDICT_NO_CHANGE: &str = "no significant change";

/// [`Series::drift`] for a run-over-run decline.
pub const DRIFT_DOWN: &str = "down";
/// [`Series::drift`] for a run-over-run rise.
pub const DRIFT_UP: &str = "up";

/// One test's trials on one side.
///
/// `scores` and `passed` are parallel: entry `i` of each describes trial `i`.
/// The number of trials is `scores.len()`; the pass rate is taken over
/// `passed`. An empty side has mean score 0, pass rate 0 and fails.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Side {
    /// Score of each trial, in `[0, 1]`.
    pub scores: Vec<f64>,
    /// Verdict of each trial (`true` = passed).
    pub passed: Vec<bool>,
}

impl Side {
    /// A side with a single trial.
    #[must_use]
    pub fn single(score: f64, passed: bool) -> Self {
        Self {
            scores: vec![score],
            passed: vec![passed],
        }
    }

    /// Appends one trial.
    pub fn push(&mut self, score: f64, passed: bool) {
        self.scores.push(score);
        self.passed.push(passed);
    }

    /// Appends one errored trial: a fail with score 0.
    pub fn push_error(&mut self) {
        self.push(0.0, false);
    }

    /// Number of trials (`scores.len()`).
    #[must_use]
    pub fn trials(&self) -> usize {
        self.scores.len()
    }

    /// Mean trial score; 0 with no trials.
    #[must_use]
    pub fn mean_score(&self) -> f64 {
        mean(&self.scores)
    }

    /// Fraction of trials passed; 0 with no trials.
    #[must_use]
    pub fn pass_rate(&self) -> f64 {
        if self.passed.is_empty() {
            return 0.0;
        }
        let passes = self.passed.iter().filter(|&&p| p).count();
        passes as f64 / self.passed.len() as f64
    }

    /// Majority verdict: at least half the trials passed (for one trial, its
    /// verdict); `false` with no trials.
    #[must_use]
    pub fn majority_passed(&self) -> bool {
        !self.passed.is_empty() && self.pass_rate() >= 0.5
    }
}

/// A test present in both runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Pair {
    /// The test's id.
    pub test_id: String,
    /// The target (model or agent) the test ran against.
    pub target: String,
    /// Trials in the base run.
    pub base: Side,
    /// Trials in the candidate run.
    pub cand: Side,
}

/// One matched test, base against candidate.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct TestDelta {
    /// The test's id.
    pub test_id: String,
    /// The target the test ran against (`base → candidate` when each run
    /// had one, different, target).
    pub target: String,
    /// The base run's target, when the runs were matched across targets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_target: Option<String>,
    /// The candidate run's target, when the runs were matched across
    /// targets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cand_target: Option<String>,
    /// Mean base trial score.
    pub base_score: f64,
    /// Mean candidate trial score.
    pub cand_score: f64,
    /// `cand_score - base_score`.
    pub delta: f64,
    /// Fraction of base trials passed.
    pub base_pass_rate: f64,
    /// Fraction of candidate trials passed.
    pub cand_pass_rate: f64,
    /// Base majority verdict (at least half the trials passed).
    pub base_passed: bool,
    /// Candidate majority verdict (at least half the trials passed).
    pub cand_passed: bool,
    /// [`FLIP_PASS_TO_FAIL`], [`FLIP_FAIL_TO_PASS`], or `None` when the majority
    /// verdict did not change.
    pub flip: Option<&'static str>,
    /// AgentV's [`OUTCOME_WIN`], [`OUTCOME_LOSS`] or [`OUTCOME_TIE`] at
    /// [`WIN_LOSS_THRESHOLD`]; see [`classify_outcome`].
    pub outcome: &'static str,
    /// AgentV's per-test normalized gain; see [`normalized_gain`].
    pub normalized_gain: Option<f64>,
    /// Number of base trials.
    pub base_trials: usize,
    /// Number of candidate trials.
    pub cand_trials: usize,
}

/// A bootstrap percentile interval.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Interval {
    /// Confidence level, e.g. 0.95.
    pub level: f64,
    /// Lower bound: the `(1 - level) / 2` quantile of the resampled statistic.
    pub low: f64,
    /// Upper bound: the `(1 + level) / 2` quantile of the resampled statistic.
    pub high: f64,
    /// Number of bootstrap resamples drawn (0 when there was nothing to
    /// resample or none were asked for; the interval is then the point estimate).
    pub resamples: usize,
    /// Seed of the `StdRng` the resamples were drawn from.
    pub seed: u64,
}

/// Aggregate comparison of a base run and a candidate run.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Summary {
    /// Number of matched tests.
    pub matched: usize,
    /// Tests whose outcome is [`OUTCOME_WIN`].
    pub wins: usize,
    /// Tests whose outcome is [`OUTCOME_LOSS`].
    pub losses: usize,
    /// Tests whose outcome is [`OUTCOME_TIE`].
    pub ties: usize,
    /// Tests whose majority verdict went from pass to fail (McNemar's `b`).
    pub pass_to_fail: usize,
    /// Tests whose majority verdict went from fail to pass (McNemar's `c`).
    pub fail_to_pass: usize,
    /// Mean over tests of the mean base score; 0 with no tests.
    pub mean_base: f64,
    /// Mean over tests of the mean candidate score; 0 with no tests.
    pub mean_cand: f64,
    /// Mean over tests of the per-test delta; 0 with no tests. Full precision
    /// (AgentV rounds its printed `meanDelta` to three decimals).
    pub mean_delta: f64,
    /// Trial-aware paired bootstrap interval of the mean delta; see
    /// [`paired_bootstrap`].
    pub ci: Interval,
    /// Exact two-sided McNemar p-value on the verdict flips; see [`mcnemar_exact`].
    pub flip_p_value: f64,
    /// Exact two-sided sign-test p-value on the per-test deltas larger than
    /// [`ZERO_DELTA_EPSILON`] in absolute value.
    pub delta_p_value: f64,
    /// Whether the change is significant; see [`summarize`].
    pub significant: bool,
    /// [`VERDICT_REGRESSED`], [`VERDICT_IMPROVED`] or [`VERDICT_NO_CHANGE`].
    pub verdict: &'static str,
    /// AgentV's aggregate normalized gain; see [`mean_normalized_gain`].
    pub normalized_gain: Option<f64>,
}

/// Knobs for [`summarize`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Options {
    /// Bootstrap resamples (default 10 000). With 0, no bootstrap is drawn: the
    /// interval is the point estimate and does not count toward significance.
    pub resamples: usize,
    /// Seed for `StdRng::seed_from_u64` (default `0x5eed`).
    pub seed: u64,
    /// Confidence level of the interval (default 0.95); clamped to `[0, 1]`,
    /// and the default when not a number.
    pub level: f64,
    /// Significance level for the McNemar test (default 0.05).
    pub alpha: f64,
    /// `|mean_delta|` must exceed this for the change to be significant
    /// (default 0).
    pub min_effect: f64,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            resamples: 10_000,
            seed: 0x5eed,
            level: 0.95,
            alpha: 0.05,
            min_effect: 0.0,
        }
    }
}

/// Reduces one matched test to its [`TestDelta`].
///
/// Scores are means over trials, verdicts are majorities (see
/// [`Side::majority_passed`]); `outcome` and `normalized_gain` follow AgentV
/// ([`classify_outcome`] at [`WIN_LOSS_THRESHOLD`], [`normalized_gain`]) applied
/// to the mean scores, which is what AgentV sees as a test's single score.
#[must_use]
pub fn test_delta(pair: &Pair) -> TestDelta {
    let base_score = pair.base.mean_score();
    let cand_score = pair.cand.mean_score();
    let delta = cand_score - base_score;
    let base_passed = pair.base.majority_passed();
    let cand_passed = pair.cand.majority_passed();
    let flip = match (base_passed, cand_passed) {
        (true, false) => Some(FLIP_PASS_TO_FAIL),
        (false, true) => Some(FLIP_FAIL_TO_PASS),
        _ => None,
    };
    TestDelta {
        test_id: pair.test_id.clone(),
        target: pair.target.clone(),
        base_target: None,
        cand_target: None,
        base_score,
        cand_score,
        delta,
        base_pass_rate: pair.base.pass_rate(),
        cand_pass_rate: pair.cand.pass_rate(),
        base_passed,
        cand_passed,
        flip,
        outcome: classify_outcome(delta, WIN_LOSS_THRESHOLD),
        normalized_gain: normalized_gain(base_score, cand_score),
        base_trials: pair.base.trials(),
        cand_trials: pair.cand.trials(),
    }
}

/// AgentV's win/loss/tie rule, ported from `classifyOutcome` in
/// `apps/cli/src/commands/compare/index.ts` (AgentV v4.42.4):
///
/// ```text
/// if (delta >= threshold) return 'win';
/// if (delta <= -threshold) return 'loss';
/// return 'tie';
/// ```
///
/// Both comparisons are inclusive and use the raw floating-point delta, so for
/// example `0.6 - 0.5` (= 0.09999999999999998) is a tie at threshold 0.1 while
/// `0.8 - 0.7` (= 0.10000000000000009) is a win, exactly as in AgentV.
#[must_use]
pub fn classify_outcome(delta: f64, threshold: f64) -> &'static str {
    if delta >= threshold {
        OUTCOME_WIN
    } else if delta <= -threshold {
        OUTCOME_LOSS
    } else {
        OUTCOME_TIE
    }
}

/// AgentV's per-test normalized gain (Hake's gain), ported from
/// `computeNormalizedGain` in `apps/cli/src/commands/compare/index.ts`
/// (AgentV v4.42.4):
///
/// ```text
/// if (baselineScore >= 1.0) return null;
/// return (candidateScore - baselineScore) / (1 - baselineScore);
/// ```
///
/// `None` when the base score is 1.0 or more (no headroom). A base score of 0
/// is not special: the gain is then the candidate score. Losses give negative
/// gains, which are unbounded below (base 0.8, candidate 0.4 gives -2).
#[must_use]
pub fn normalized_gain(base_score: f64, cand_score: f64) -> Option<f64> {
    if base_score >= 1.0 {
        return None;
    }
    Some((cand_score - base_score) / (1.0 - base_score))
}

/// AgentV's aggregate normalized gain, ported from the `meanNormalizedGain`
/// computation in `compareResults`, `apps/cli/src/commands/compare/index.ts`
/// (AgentV v4.42.4):
///
/// ```text
/// const gainValues = matched.map((m) => m.normalizedGain).filter((g) => g !== null);
/// const meanNormalizedGain = gainValues.length > 0
///   ? Math.round((gainValues.reduce((sum, g) => sum + g, 0) / gainValues.length) * 1000) / 1000
///   : null;
/// ```
///
/// That is the mean of the per-test gains (not the gain of the mean scores),
/// skipping tests whose gain is `None` (base score 1.0), rounded to three
/// decimals with JavaScript's `Math.round` (halves round toward +infinity);
/// `None` when no test has a gain.
#[must_use]
pub fn mean_normalized_gain(deltas: &[TestDelta]) -> Option<f64> {
    let gains: Vec<f64> = deltas.iter().filter_map(|d| d.normalized_gain).collect();
    if gains.is_empty() {
        return None;
    }
    let mean = gains.iter().sum::<f64>() / gains.len() as f64;
    Some(js_math_round(mean * 1000.0) / 1000.0)
}

/// JavaScript's `Math.round`: the nearest integer, halves toward +infinity.
/// Negative zero is returned as positive zero (as `JSON.stringify` prints it).
fn js_math_round(x: f64) -> f64 {
    if !x.is_finite() {
        return x;
    }
    let floor = x.floor();
    // `x - floor` is exact for every finite f64.
    let rounded = if x - floor >= 0.5 { floor + 1.0 } else { floor };
    if rounded == 0.0 { 0.0 } else { rounded }
}

/// Aggregates matched tests into a [`Summary`].
///
/// `deltas` are the [`test_delta`]s of `pairs`, in the same order. The
/// interval resamples the trials in `pairs` (see [`paired_bootstrap`]); when
/// `pairs` does not have one entry per delta (for example when only deltas
/// are at hand and `pairs` is empty), it resamples the per-test mean scores of
/// `deltas` instead, without the trial level.
///
/// The change is **significant** when `|mean_delta| > min_effect` and either
/// - the bootstrap interval excludes 0 on the side of `mean_delta`
///   (`low > 0` with `mean_delta > 0`, or `high < 0` with `mean_delta < 0`;
///   only when resamples were drawn), or
/// - the McNemar p-value is below `alpha` and the flips lean the way of
///   `mean_delta` (more fail→pass with `mean_delta > 0`, more pass→fail with
///   `mean_delta < 0`).
///
/// The verdict is [`VERDICT_REGRESSED`] when significant with
/// `mean_delta < 0`, [`VERDICT_IMPROVED`] when significant with
/// `mean_delta > 0`, and [`VERDICT_NO_CHANGE`] otherwise.
#[must_use]
pub fn summarize(deltas: &[TestDelta], pairs: &[Pair], options: &Options) -> Summary {
    let matched = deltas.len();
    let count_outcome = |o: &str| deltas.iter().filter(|d| d.outcome == o).count();
    let count_flip = |f: &str| deltas.iter().filter(|d| d.flip == Some(f)).count();
    let wins = count_outcome(OUTCOME_WIN);
    let losses = count_outcome(OUTCOME_LOSS);
    let ties = count_outcome(OUTCOME_TIE);
    let pass_to_fail = count_flip(FLIP_PASS_TO_FAIL);
    let fail_to_pass = count_flip(FLIP_FAIL_TO_PASS);

    let mean_of = |f: fn(&TestDelta) -> f64| {
        if deltas.is_empty() {
            0.0
        } else {
            deltas.iter().map(f).sum::<f64>() / matched as f64
        }
    };
    let mean_base = mean_of(|d| d.base_score);
    let mean_cand = mean_of(|d| d.cand_score);
    let mean_delta = mean_of(|d| d.delta);

    let ci = if pairs.len() == deltas.len() {
        paired_bootstrap(pairs, options)
    } else {
        let singles: Vec<([f64; 1], [f64; 1])> = deltas
            .iter()
            .map(|d| ([d.base_score], [d.cand_score]))
            .collect();
        let tests: Vec<(&[f64], &[f64])> = singles
            .iter()
            .map(|(b, c)| (b.as_slice(), c.as_slice()))
            .collect();
        bootstrap_interval(&tests, options)
    };

    let flip_p_value = mcnemar_exact(pass_to_fail, fail_to_pass);
    let positive = deltas
        .iter()
        .filter(|d| d.delta > ZERO_DELTA_EPSILON)
        .count();
    let negative = deltas
        .iter()
        .filter(|d| d.delta < -ZERO_DELTA_EPSILON)
        .count();
    let delta_p_value = sign_test(positive, negative);

    let large_enough = mean_delta.abs() > options.min_effect;
    let ci_says = ci.resamples > 0
        && ((ci.low > 0.0 && mean_delta > 0.0) || (ci.high < 0.0 && mean_delta < 0.0));
    let flips_agree = (fail_to_pass > pass_to_fail && mean_delta > 0.0)
        || (pass_to_fail > fail_to_pass && mean_delta < 0.0);
    let flips_say = flip_p_value < options.alpha && flips_agree;
    let significant = large_enough && (ci_says || flips_say);
    let verdict = if significant && mean_delta < 0.0 {
        VERDICT_REGRESSED
    } else if significant && mean_delta > 0.0 {
        VERDICT_IMPROVED
    } else {
        VERDICT_NO_CHANGE
    };

    Summary {
        matched,
        wins,
        losses,
        ties,
        pass_to_fail,
        fail_to_pass,
        mean_base,
        mean_cand,
        mean_delta,
        ci,
        flip_p_value,
        delta_p_value,
        significant,
        verdict,
        normalized_gain: mean_normalized_gain(deltas),
    }
}

/// Trial-aware paired (cluster) bootstrap percentile interval of the mean
/// per-test delta.
///
/// Each of `options.resamples` resamples draws `pairs.len()` tests with
/// replacement; within each drawn test, a side with more than one trial has
/// its trials redrawn with replacement (so trial noise widens the interval),
/// and the test contributes `mean(cand trials) - mean(base trials)`. The
/// statistic is the mean of those contributions; the interval is its
/// `(1 - level) / 2` and `(1 + level) / 2` quantiles (linear interpolation
/// between order statistics). Indices are drawn by rejection from the bits of
/// `StdRng::seed_from_u64(options.seed)`, so equal inputs and seed give equal
/// intervals. With no pairs the interval is `[0, 0]`; with `resamples == 0`
/// it is the point estimate.
#[must_use]
pub fn paired_bootstrap(pairs: &[Pair], options: &Options) -> Interval {
    let tests: Vec<(&[f64], &[f64])> = pairs
        .iter()
        .map(|p| (p.base.scores.as_slice(), p.cand.scores.as_slice()))
        .collect();
    bootstrap_interval(&tests, options)
}

/// The bootstrap of [`paired_bootstrap`] over `(base trial scores, candidate
/// trial scores)` per test.
fn bootstrap_interval(tests: &[(&[f64], &[f64])], options: &Options) -> Interval {
    let level = if options.level.is_nan() {
        Options::default().level
    } else {
        options.level.clamp(0.0, 1.0)
    };
    let point = if tests.is_empty() {
        0.0
    } else {
        tests.iter().map(|(b, c)| mean(c) - mean(b)).sum::<f64>() / tests.len() as f64
    };
    if tests.is_empty() || options.resamples == 0 {
        return Interval {
            level,
            low: point,
            high: point,
            resamples: 0,
            seed: options.seed,
        };
    }

    let mut rng = IndexSource::new(options.seed);
    let n = tests.len();
    let mut stats = Vec::with_capacity(options.resamples);
    for _ in 0..options.resamples {
        let mut total = 0.0;
        for _ in 0..n {
            let (base, cand) = tests[rng.index(n)];
            let base_mean = resampled_mean(base, &mut rng);
            let cand_mean = resampled_mean(cand, &mut rng);
            total += cand_mean - base_mean;
        }
        stats.push(total / n as f64);
    }
    stats.sort_by(f64::total_cmp);
    let tail = (1.0 - level) / 2.0;
    Interval {
        level,
        low: quantile(&stats, tail),
        high: quantile(&stats, 1.0 - tail),
        resamples: options.resamples,
        seed: options.seed,
    }
}

/// Mean of `scores` redrawn with replacement when there are two or more;
/// the score itself for one; 0 for none.
fn resampled_mean(scores: &[f64], rng: &mut IndexSource) -> f64 {
    match scores.len() {
        0 => 0.0,
        1 => scores[0],
        k => {
            let mut total = 0.0;
            for _ in 0..k {
                total += scores[rng.index(k)];
            }
            total / k as f64
        }
    }
}

/// Uniform random indices drawn from a seeded `StdRng`, spending few random
/// bits: each index below `n` takes the `ceil(log2 n)` low bits of a buffered
/// 64-bit word and is redrawn when it is `n` or more (rejection keeps it
/// unbiased). Bootstraps draw tens of millions of small indices, and
/// generating the words is their main cost, above all in unoptimised builds.
struct IndexSource {
    rng: StdRng,
    bits: u64,
    available: u32,
}

impl IndexSource {
    /// A source seeded with `StdRng::seed_from_u64(seed)`.
    fn new(seed: u64) -> Self {
        Self {
            rng: StdRng::seed_from_u64(seed),
            bits: 0,
            available: 0,
        }
    }

    /// The next `width` (1 to 64) random bits.
    fn take(&mut self, width: u32) -> u64 {
        if self.available < width {
            self.bits = self.rng.next_u64();
            self.available = 64;
        }
        let value = self.bits & (u64::MAX >> (64 - width));
        self.bits = self.bits.checked_shr(width).unwrap_or(0);
        self.available -= width;
        value
    }

    /// A uniform index in `0..n`; 0 when `n <= 1`.
    fn index(&mut self, n: usize) -> usize {
        if n <= 1 {
            return 0;
        }
        let width = usize::BITS - (n - 1).leading_zeros();
        loop {
            let value = self.take(width);
            if value < n as u64 {
                return value as usize;
            }
        }
    }
}

/// The `p` quantile of ascending `sorted` (non-empty), interpolating linearly
/// between order statistics (Hyndman and Fan type 7, R's default).
fn quantile(sorted: &[f64], p: f64) -> f64 {
    let h = (sorted.len() - 1) as f64 * p.clamp(0.0, 1.0);
    let lo = h.floor();
    let i = lo as usize;
    let frac = h - lo;
    match sorted.get(i + 1) {
        Some(&next) if frac > 0.0 => sorted[i] + frac * (next - sorted[i]),
        _ => sorted[i],
    }
}

/// Arithmetic mean; 0 for an empty slice.
fn mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        0.0
    } else {
        values.iter().sum::<f64>() / values.len() as f64
    }
}

/// Exact two-sided McNemar test on discordant pairs: `b` tests went pass→fail,
/// `c` went fail→pass. Returns `min(1, 2 * P(X <= min(b, c)))` for
/// `X ~ Binomial(b + c, 1/2)`, and 1 when `b + c == 0`.
#[must_use]
pub fn mcnemar_exact(b: usize, c: usize) -> f64 {
    binomial_two_sided(b, c)
}

/// Exact two-sided sign test: `positive` and `negative` are the counts of
/// nonzero differences of each sign. Same formula as [`mcnemar_exact`].
#[must_use]
pub fn sign_test(positive: usize, negative: usize) -> f64 {
    binomial_two_sided(positive, negative)
}

/// `min(1, 2 * P(X <= min(a, b)))` for `X ~ Binomial(a + b, 1/2)`; 1 when
/// `a + b == 0`.
///
/// Summed in log2 space so it stays accurate (no underflow of `2^-n`) for `n`
/// in the thousands: the terms `C(n, i) 2^-n` for `i = 0..=k` grow with `i`
/// (as `k <= n / 2`), each from the previous by the ratio `(n - i) / (i + 1)`,
/// and are added relative to the largest. For `k = 0` the result is exactly
/// `2^(1 - n)`.
fn binomial_two_sided(a: usize, b: usize) -> f64 {
    let n = a + b;
    if n == 0 {
        return 1.0;
    }
    let k = a.min(b);
    let mut log2_terms = Vec::with_capacity(k + 1);
    let mut log2_term = -(n as f64);
    log2_terms.push(log2_term);
    for i in 0..k {
        log2_term += ((n - i) as f64).log2() - ((i + 1) as f64).log2();
        log2_terms.push(log2_term);
    }
    let largest = log2_term;
    let relative: f64 = log2_terms.iter().map(|t| (t - largest).exp2()).sum();
    (largest + 1.0 + relative.log2()).exp2().min(1.0)
}

/// One test's score series across runs (oldest first), `None` where the test
/// did not run.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Series {
    /// The test's id.
    pub test_id: String,
    /// The target the test ran against.
    pub target: String,
    /// Score per run, oldest first; `None` where the test did not run.
    pub scores: Vec<Option<f64>>,
    /// Verdict per run, oldest first; `None` where the test did not run.
    pub passed: Vec<Option<bool>>,
    /// Verdict changes between adjacent runs that both have a verdict (a run
    /// without one breaks the chain: pass, absent, fail is not a flap).
    pub flaps: usize,
    /// `flaps >= FLAKY_MIN_FLAPS` (2).
    pub flaky: bool,
    /// Ordinary least-squares slope of score against run index (the position
    /// in `scores`), over the runs with a finite score; `None` with fewer than
    /// [`SLOPE_MIN_POINTS`] (3) of them.
    pub slope: Option<f64>,
    /// [`DRIFT_DOWN`] when `slope <= -0.05` ([`DRIFT_MIN_SLOPE`]) and the last
    /// score is below the first minus 0.1 ([`DRIFT_MIN_CHANGE`]);
    /// [`DRIFT_UP`] when `slope >= 0.05` and the last score is above the first
    /// plus 0.1; `None` otherwise. First and last are over the scored runs.
    pub drift: Option<&'static str>,
}

/// Builds the [`Series`] of one test for `evalhost trend`, computing flaps,
/// flakiness, slope and drift as documented on [`Series`]'s fields.
#[must_use]
pub fn series(
    test_id: &str,
    target: &str,
    scores: Vec<Option<f64>>,
    passed: Vec<Option<bool>>,
) -> Series {
    let flaps = passed
        .windows(2)
        .filter(|w| matches!((w[0], w[1]), (Some(a), Some(b)) if a != b))
        .count();
    let points: Vec<(f64, f64)> = scores
        .iter()
        .enumerate()
        .filter_map(|(i, s)| s.filter(|v| v.is_finite()).map(|v| (i as f64, v)))
        .collect();
    let slope = ols_slope(&points);
    let drift = match (slope, points.first(), points.last()) {
        (Some(slope), Some(&(_, first)), Some(&(_, last))) => {
            if slope <= -DRIFT_MIN_SLOPE && last < first - DRIFT_MIN_CHANGE {
                Some(DRIFT_DOWN)
            } else if slope >= DRIFT_MIN_SLOPE && last > first + DRIFT_MIN_CHANGE {
                Some(DRIFT_UP)
            } else {
                None
            }
        }
        _ => None,
    };
    Series {
        test_id: test_id.to_owned(),
        target: target.to_owned(),
        scores,
        passed,
        flaps,
        flaky: flaps >= FLAKY_MIN_FLAPS,
        slope,
        drift,
    }
}

/// Least-squares slope of `y` on `x`; `None` with fewer than
/// [`SLOPE_MIN_POINTS`] points or no spread in `x`.
fn ols_slope(points: &[(f64, f64)]) -> Option<f64> {
    if points.len() < SLOPE_MIN_POINTS {
        return None;
    }
    let n = points.len() as f64;
    let mean_x = points.iter().map(|p| p.0).sum::<f64>() / n;
    let mean_y = points.iter().map(|p| p.1).sum::<f64>() / n;
    let (sxx, sxy) = points.iter().fold((0.0, 0.0), |(sxx, sxy), &(x, y)| {
        let dx = x - mean_x;
        (sxx + dx * dx, sxy + dx * (y - mean_y))
    });
    (sxx > 0.0).then(|| sxy / sxx)
}

#[cfg(test)]
mod tests;
