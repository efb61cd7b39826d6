use super::*;

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol
}

fn pair(id: &str, base: Side, cand: Side) -> Pair {
    Pair {
        test_id: id.to_owned(),
        target: "t".to_owned(),
        base,
        cand,
    }
}

/// A single-trial pair; verdicts are `score >= 0.5`.
fn single(id: &str, base: f64, cand: f64) -> Pair {
    pair(
        id,
        Side::single(base, base >= 0.5),
        Side::single(cand, cand >= 0.5),
    )
}

fn side(scores: &[f64]) -> Side {
    Side {
        scores: scores.to_vec(),
        passed: scores.iter().map(|&s| s >= 0.5).collect(),
    }
}

fn run(pairs: &[Pair], options: &Options) -> (Vec<TestDelta>, Summary) {
    let deltas: Vec<TestDelta> = pairs.iter().map(test_delta).collect();
    let summary = summarize(&deltas, pairs, options);
    (deltas, summary)
}

/// Deterministic small noise in [-0.02, 0.02].
fn noise(i: usize) -> f64 {
    ((i * 7919 % 41) as f64 - 20.0) / 1000.0
}

// ---- exact binomial tests ----

#[test]
fn mcnemar_hand_computed() {
    assert_eq!(mcnemar_exact(5, 0), 0.0625);
    assert_eq!(mcnemar_exact(0, 5), 0.0625);
    assert_eq!(mcnemar_exact(10, 0), 0.001953125);
    assert_eq!(mcnemar_exact(3, 3), 1.0);
    assert_eq!(mcnemar_exact(0, 0), 1.0);
    assert_eq!(mcnemar_exact(1, 0), 1.0);
    assert_eq!(mcnemar_exact(20, 0), 1.9073486328125e-06);
    // n = 10, k = 2: 2 * (1 + 10 + 45) / 1024 = 112 / 1024.
    assert!(close(mcnemar_exact(8, 2), 0.109375, 1e-15));
    assert!(close(mcnemar_exact(2, 8), 0.109375, 1e-15));
}

#[test]
fn mcnemar_large_n_matches_exact_rationals() {
    // Reference values from exact rational arithmetic.
    let cases = [
        (60, 40, 0.05688793364098079),
        (520, 480, 0.21744829320414094),
        (1500, 1400, 0.06598734966518381),
        (2000, 1000, 1.0090148627941341e-75),
    ];
    for (b, c, want) in cases {
        let got = mcnemar_exact(b, c);
        assert!(
            ((got - want) / want).abs() < 1e-10,
            "b={b} c={c}: got {got}, want {want}"
        );
    }
    assert_eq!(mcnemar_exact(2500, 2500), 1.0);
    let tiny = mcnemar_exact(0, 4000);
    assert!(tiny.is_finite() && (0.0..1e-300).contains(&tiny));
}

#[test]
fn sign_test_ignores_near_zero_deltas() {
    let mut pairs: Vec<Pair> = (0..5)
        .map(|i| single(&format!("up{i}"), 0.2, 0.4))
        .collect();
    pairs.extend((0..3).map(|i| single(&format!("same{i}"), 0.3, 0.3 + 1e-12)));
    let (_, s) = run(&pairs, &Options::default());
    assert_eq!(s.delta_p_value, 0.0625);
    let pairs: Vec<Pair> = (0..6)
        .map(|i| single(&format!("x{i}"), 0.5, if i % 2 == 0 { 0.6 } else { 0.4 }))
        .collect();
    let (_, s) = run(&pairs, &Options::default());
    assert_eq!(s.delta_p_value, 1.0);
}

// ---- AgentV rules ----

#[test]
fn agentv_outcome_threshold_is_inclusive_on_raw_floats() {
    let outcome = |b: f64, c: f64| test_delta(&single("x", b, c)).outcome;
    assert_eq!(outcome(0.0, 0.1), "win"); // delta == 0.1 exactly: >= wins
    assert_eq!(outcome(0.7, 0.8), "win"); // 0.10000000000000009
    assert_eq!(outcome(0.5, 0.6), "tie"); // 0.09999999999999998
    assert_eq!(outcome(0.2, 0.3), "tie"); // 0.09999999999999998
    assert_eq!(outcome(0.1, 0.0), "loss"); // -0.1 <= -0.1
    assert_eq!(outcome(0.8, 0.7), "loss"); // -0.10000000000000009
    assert_eq!(outcome(0.6, 0.5), "tie"); // -0.09999999999999998
    assert_eq!(outcome(0.4, 0.4), "tie");
    assert_eq!(outcome(0.0, 1.0), "win");
    assert_eq!(outcome(1.0, 0.0), "loss");
    assert_eq!(classify_outcome(0.05, 0.05), "win");
    assert_eq!(classify_outcome(-0.05, 0.05), "loss");
}

#[test]
fn agentv_per_test_normalized_gain() {
    assert_eq!(normalized_gain(0.5, 0.75), Some(0.5));
    assert_eq!(normalized_gain(0.0, 0.3), Some(0.3)); // base 0: gain = cand
    assert_eq!(normalized_gain(0.75, 1.0), Some(1.0));
    assert_eq!(normalized_gain(1.0, 1.0), None);
    assert_eq!(normalized_gain(1.0, 0.2), None);
    let g = normalized_gain(0.8, 0.4).unwrap();
    assert!(close(g, -2.0, 1e-12), "{g}");
    // Trial means feed it: base trials [1, 0] -> 0.5, cand [1, 1, 0, 1] -> 0.75.
    let d = test_delta(&pair("x", side(&[1.0, 0.0]), side(&[1.0, 1.0, 0.0, 1.0])));
    assert_eq!(d.normalized_gain, Some(0.5));
    assert_eq!(d.outcome, "win");
    // All base trials perfect: no headroom.
    let d = test_delta(&pair("x", side(&[1.0, 1.0, 1.0]), side(&[0.5])));
    assert_eq!(d.normalized_gain, None);
    assert_eq!(d.outcome, "loss");
}

#[test]
fn agentv_aggregate_gain_is_rounded_mean_of_per_test_gains() {
    // Gains 0.5, (none: base 1.0), 1.0, -2.0 -> mean of three = -1/6 -> -0.167.
    let pairs = [
        single("a", 0.5, 0.75),
        single("b", 1.0, 0.5),
        single("c", 0.75, 1.0),
        single("d", 0.8, 0.4),
    ];
    let (deltas, s) = run(&pairs, &Options::default());
    assert_eq!(deltas[1].normalized_gain, None);
    assert_eq!(s.normalized_gain, Some(-0.167));
    // Not the gain of the means: means 0.7625 -> 0.6625 would give about -0.42.
    assert!(normalized_gain(s.mean_base, s.mean_cand).unwrap() < -0.4);
    // Gains 1/3 and 0.5 -> 0.41666 -> 0.417.
    let pairs = [single("a", 0.25, 0.5), single("b", 0.5, 0.75)];
    let (_, s) = run(&pairs, &Options::default());
    assert_eq!(s.normalized_gain, Some(0.417));
    // Only perfect bases: no gain at all.
    let (_, s) = run(&[single("a", 1.0, 0.9)], &Options::default());
    assert_eq!(s.normalized_gain, None);
    // JavaScript Math.round sends halves toward +infinity: -62.5 -> -62, 62.5 -> 63.
    let (_, s) = run(&[single("a", 0.5, 0.46875)], &Options::default());
    assert_eq!(s.normalized_gain, Some(-0.062));
    let (_, s) = run(&[single("a", 0.5, 0.53125)], &Options::default());
    assert_eq!(s.normalized_gain, Some(0.063));
}

#[test]
fn js_round_matches_math_round() {
    assert_eq!(js_math_round(2.5), 3.0);
    assert_eq!(js_math_round(-2.5), -2.0);
    assert_eq!(js_math_round(-2.6), -3.0);
    assert_eq!(js_math_round(0.49999999999999994), 0.0);
    assert!(js_math_round(-0.4).is_sign_positive());
}

// ---- per-test reduction ----

#[test]
fn test_delta_majorities_flips_and_trials() {
    let mut base = Side::default();
    base.push(0.9, true);
    base.push(0.2, false);
    let mut cand = Side::default();
    cand.push(0.3, false);
    cand.push_error();
    cand.push(0.9, true);
    let d = test_delta(&pair("x", base, cand));
    assert_eq!(d.base_pass_rate, 0.5);
    assert!(d.base_passed, "half passing is a pass");
    assert!(close(d.cand_pass_rate, 1.0 / 3.0, 1e-15));
    assert!(!d.cand_passed);
    assert_eq!(d.flip, Some("pass->fail"));
    assert_eq!((d.base_trials, d.cand_trials), (2, 3));
    assert!(close(d.base_score, 0.55, 1e-15));
    assert!(close(d.cand_score, 0.4, 1e-15));
    assert!(close(d.delta, -0.15, 1e-15));
    assert_eq!(d.outcome, "loss");

    let d = test_delta(&single("y", 0.2, 0.9));
    assert_eq!(d.flip, Some("fail->pass"));
    let d = test_delta(&single("z", 0.9, 0.8));
    assert_eq!(d.flip, None);

    let empty = test_delta(&pair("e", Side::default(), Side::single(0.5, true)));
    assert_eq!((empty.base_score, empty.base_trials), (0.0, 0));
    assert!(!empty.base_passed);
}

#[test]
fn serializes_to_json() {
    let pairs = [single("a", 0.5, 0.75), single("b", 1.0, 1.0)];
    let (deltas, s) = run(&pairs, &Options::default());
    let d = serde_json::to_value(&deltas[1]).unwrap();
    assert_eq!(d["flip"], serde_json::Value::Null);
    assert_eq!(d["outcome"], "tie");
    assert_eq!(d["normalized_gain"], serde_json::Value::Null);
    let v = serde_json::to_value(&s).unwrap();
    assert_eq!(v["matched"], 2);
    assert_eq!(v["ci"]["seed"], 0x5eed);
    assert_eq!(v["verdict"], s.verdict);
}

// ---- summaries and the bootstrap ----

#[test]
fn empty_comparison() {
    let (_, s) = run(&[], &Options::default());
    assert_eq!(s.matched, 0);
    assert_eq!((s.mean_base, s.mean_cand, s.mean_delta), (0.0, 0.0, 0.0));
    assert_eq!((s.ci.low, s.ci.high), (0.0, 0.0));
    assert_eq!(s.ci.resamples, 0);
    assert_eq!((s.flip_p_value, s.delta_p_value), (1.0, 1.0));
    assert!(!s.significant);
    assert_eq!(s.verdict, "no significant change");
    assert_eq!(s.normalized_gain, None);
}

#[test]
fn single_test_single_trial_interval_is_the_point() {
    let (deltas, s) = run(&[single("a", 0.7, 0.4)], &Options::default());
    assert_eq!(s.ci.low, deltas[0].delta);
    assert_eq!(s.ci.high, deltas[0].delta);
    assert_eq!(s.mean_delta, deltas[0].delta);
    assert_eq!(s.ci.resamples, 10_000);
}

fn noisy_pairs() -> Vec<Pair> {
    (0..15)
        .map(|i| {
            let base = 0.5 + noise(i) * 5.0;
            let cand = 0.5 + noise(i + 100) * 5.0;
            pair(&format!("t{i}"), side(&[base, base - 0.1]), side(&[cand]))
        })
        .collect()
}

#[test]
fn bootstrap_is_deterministic_per_seed() {
    let pairs = noisy_pairs();
    let options = Options {
        resamples: 2_000,
        ..Options::default()
    };
    let a = paired_bootstrap(&pairs, &options);
    let b = paired_bootstrap(&pairs, &options);
    assert_eq!(a, b);
    let (_, s1) = run(&pairs, &options);
    let (_, s2) = run(&pairs, &options);
    assert_eq!(s1, s2);
    assert_eq!(s1.ci, a);
    let other = paired_bootstrap(
        &pairs,
        &Options {
            seed: 42,
            ..options
        },
    );
    assert_eq!(other.seed, 42);
    assert!(
        other.low != a.low || other.high != a.high,
        "{a:?} vs {other:?}"
    );
    assert!(a.low < a.high);
}

#[test]
fn clear_regression_is_detected() {
    let pairs: Vec<Pair> = (0..20)
        .map(|i| {
            let base = 0.7 + noise(i);
            single(&format!("t{i}"), base, base - 0.3 + noise(i + 7))
        })
        .collect();
    let (_, s) = run(&pairs, &Options::default());
    assert_eq!(s.matched, 20);
    assert!(s.ci.high < 0.0, "{:?}", s.ci);
    assert!(s.ci.low <= s.mean_delta && s.mean_delta <= s.ci.high);
    assert!(close(s.mean_delta, -0.3, 0.03));
    assert_eq!(s.losses, 20);
    assert_eq!((s.wins, s.ties), (0, 0));
    assert_eq!((s.pass_to_fail, s.fail_to_pass), (20, 0));
    assert!(s.flip_p_value < 1e-5);
    assert!(s.delta_p_value < 1e-5);
    assert!(s.significant);
    assert_eq!(s.verdict, "regressed");
}

#[test]
fn clear_improvement_is_detected() {
    let pairs: Vec<Pair> = (0..20)
        .map(|i| single(&format!("t{i}"), 0.4 + noise(i), 0.6 + noise(i + 3)))
        .collect();
    let (_, s) = run(&pairs, &Options::default());
    assert!(s.ci.low > 0.0);
    assert_eq!(s.verdict, "improved");
}

#[test]
fn pure_noise_is_no_significant_change() {
    // Deltas +0.2 and -0.2 alternating, with verdicts flipping both ways.
    let pairs: Vec<Pair> = (0..20)
        .map(|i| {
            let (b, c) = if i % 2 == 0 { (0.4, 0.6) } else { (0.6, 0.4) };
            single(&format!("t{i}"), b, c)
        })
        .collect();
    let (_, s) = run(&pairs, &Options::default());
    assert!(s.mean_delta.abs() < 1e-12);
    assert!(s.ci.low < 0.0 && s.ci.high > 0.0, "{:?}", s.ci);
    assert_eq!((s.pass_to_fail, s.fail_to_pass), (10, 10));
    assert_eq!(s.flip_p_value, 1.0);
    assert_eq!(s.delta_p_value, 1.0);
    assert_eq!((s.wins, s.losses), (10, 10));
    assert!(!s.significant);
    assert_eq!(s.verdict, "no significant change");

    // Symmetric noise without flips.
    let pairs: Vec<Pair> = (0..30)
        .map(|i| {
            let d = noise(i) * 3.0;
            single(&format!("n{i}"), 0.7, 0.7 + if i % 2 == 0 { d } else { -d })
        })
        .collect();
    let (_, s) = run(&pairs, &Options::default());
    assert!(s.ci.low < 0.0 && s.ci.high > 0.0, "{:?}", s.ci);
    assert_eq!(s.verdict, "no significant change");
}

#[test]
fn min_effect_suppresses_tiny_consistent_shift() {
    let pairs: Vec<Pair> = (0..30)
        .map(|i| single(&format!("t{i}"), 0.5, 0.51))
        .collect();
    let (deltas, s) = run(&pairs, &Options::default());
    assert!(s.ci.low > 0.0);
    assert_eq!(s.verdict, "improved");
    assert_eq!(s.ties, 30);
    let strict = Options {
        min_effect: 0.05,
        ..Options::default()
    };
    let s = summarize(&deltas, &pairs, &strict);
    assert!(s.ci.low > 0.0, "the interval still excludes 0");
    assert!(!s.significant);
    assert_eq!(s.verdict, "no significant change");
}

#[test]
fn flips_alone_decide_only_when_they_agree_with_the_mean() {
    // No bootstrap: only the McNemar rule can make it significant.
    let no_ci = Options {
        resamples: 0,
        ..Options::default()
    };
    let pairs: Vec<Pair> = (0..10)
        .map(|i| single(&format!("t{i}"), 0.45, 0.55))
        .collect();
    let (_, s) = run(&pairs, &no_ci);
    assert_eq!(s.ci.resamples, 0);
    assert_eq!(s.ci.low, s.ci.high);
    assert_eq!(s.fail_to_pass, 10);
    assert_eq!(s.flip_p_value, 0.001953125);
    assert_eq!(s.verdict, "improved");

    // The same flips while the mean score falls: not significant.
    let mut pairs = pairs;
    pairs.extend((0..10).map(|i| single(&format!("d{i}"), 0.9, 0.6)));
    let (_, s) = run(&pairs, &no_ci);
    assert!(s.mean_delta < 0.0);
    assert!(s.flip_p_value < 0.05);
    assert!(!s.significant);
    assert_eq!(s.verdict, "no significant change");
}

#[test]
fn trial_noise_widens_the_interval() {
    // Same per-test means; one run has one trial per side, the other four
    // spread-out trials per side.
    let means: Vec<(f64, f64)> = (0..12)
        .map(|i| (0.6 + noise(i) * 4.0, 0.5 + noise(i + 50) * 4.0))
        .collect();
    let singles: Vec<Pair> = means
        .iter()
        .enumerate()
        .map(|(i, &(b, c))| single(&format!("t{i}"), b, c))
        .collect();
    let spread = |m: f64| side(&[m - 0.3, m + 0.3, m - 0.1, m + 0.1]);
    let trials: Vec<Pair> = means
        .iter()
        .enumerate()
        .map(|(i, &(b, c))| pair(&format!("t{i}"), spread(b), spread(c)))
        .collect();
    let (_, one) = run(&singles, &Options::default());
    let (_, many) = run(&trials, &Options::default());
    assert!(close(one.mean_delta, many.mean_delta, 1e-12));
    let width = |s: &Summary| s.ci.high - s.ci.low;
    assert!(
        width(&many) > width(&one) * 1.2,
        "trials {:?} vs single {:?}",
        many.ci,
        one.ci
    );
}

#[test]
fn deltas_without_pairs_bootstrap_per_test() {
    let pairs: Vec<Pair> = (0..10)
        .map(|i| single(&format!("t{i}"), 0.8, 0.5 + noise(i)))
        .collect();
    let deltas: Vec<TestDelta> = pairs.iter().map(test_delta).collect();
    let with = summarize(&deltas, &pairs, &Options::default());
    let without = summarize(&deltas, &[], &Options::default());
    // Single-trial pairs: the two bootstraps draw the same numbers.
    assert_eq!(with, without);
    assert_eq!(without.verdict, "regressed");
}

#[test]
fn level_sets_the_quantiles() {
    let pairs = noisy_pairs();
    let wide = paired_bootstrap(&pairs, &Options::default());
    let narrow = paired_bootstrap(
        &pairs,
        &Options {
            level: 0.5,
            ..Options::default()
        },
    );
    assert_eq!(narrow.level, 0.5);
    assert!(wide.low < narrow.low && narrow.high < wide.high);
    assert_eq!(quantile(&[1.0, 2.0, 3.0, 4.0], 0.5), 2.5);
    assert_eq!(quantile(&[1.0, 2.0, 3.0, 4.0], 1.0), 4.0);
    assert_eq!(quantile(&[1.0, 2.0, 3.0, 4.0], 0.0), 1.0);
    assert_eq!(quantile(&[7.0], 0.975), 7.0);
}

#[test]
fn percentile_positions_on_a_known_distribution() {
    // One test, base [0], candidate trials [0, 1] redrawn: the statistic is
    // 0, 0.5 or 1 with probabilities 1/4, 1/2, 1/4.
    let pairs = [pair("x", side(&[0.0]), side(&[0.0, 1.0]))];
    let at = |level: f64| {
        paired_bootstrap(
            &pairs,
            &Options {
                level,
                ..Options::default()
            },
        )
    };
    let middle = at(0.4); // quantiles 0.3 and 0.7
    assert_eq!((middle.low, middle.high), (0.5, 0.5));
    let wide = at(0.9); // quantiles 0.05 and 0.95
    assert_eq!((wide.low, wide.high), (0.0, 1.0));
    let all = at(1.0);
    assert_eq!((all.low, all.high), (0.0, 1.0));
}

#[test]
fn index_source_is_uniform_and_in_range() {
    let mut source = IndexSource::new(7);
    assert_eq!(source.index(0), 0);
    assert_eq!(source.index(1), 0);
    for n in [2, 3, 5, 7, 1000, 1 << 40] {
        let mut counts = [0usize; 7];
        let draws = 70_000;
        for _ in 0..draws {
            let i = source.index(n);
            assert!(i < n);
            counts[i % 7] += 1;
        }
        if n <= 7 {
            let expected = draws / n;
            for (i, &c) in counts.iter().enumerate().take(n) {
                let off = (c as f64 - expected as f64).abs() / expected as f64;
                assert!(off < 0.03, "n={n} index {i}: {c} of {draws}");
            }
        }
    }
    let mut a = IndexSource::new(1);
    let mut b = IndexSource::new(1);
    let mut c = IndexSource::new(2);
    let first: Vec<usize> = (0..50).map(|_| a.index(10)).collect();
    assert_eq!(first, (0..50).map(|_| b.index(10)).collect::<Vec<_>>());
    assert_ne!(first, (0..50).map(|_| c.index(10)).collect::<Vec<_>>());
}

// ---- trend ----

#[test]
fn series_flaps_count_adjacent_verdicts_only() {
    let s = series(
        "x",
        "t",
        vec![None; 5],
        vec![Some(true), Some(false), Some(true), None, Some(false)],
    );
    assert_eq!(s.flaps, 2);
    assert!(s.flaky);
    let s = series(
        "x",
        "t",
        vec![],
        vec![Some(true), Some(true), Some(false), Some(false)],
    );
    assert_eq!(s.flaps, 1);
    assert!(!s.flaky);
    let s = series("x", "t", vec![], vec![Some(true), None, Some(false)]);
    assert_eq!(s.flaps, 0);
    assert_eq!((s.slope, s.drift), (None, None));
}

#[test]
fn series_slope_and_drift() {
    let down = series(
        "x",
        "t",
        vec![Some(0.9), Some(0.8), Some(0.7), Some(0.6)],
        vec![Some(true); 4],
    );
    assert!(close(down.slope.unwrap(), -0.1, 1e-12));
    assert_eq!(down.drift, Some("down"));
    assert_eq!(down.flaps, 0);

    // Gaps keep their run index: x = 0, 2, 3 -> slope exactly 0.1 by hand.
    let up = series(
        "x",
        "t",
        vec![Some(0.2), None, Some(0.4), Some(0.5)],
        vec![],
    );
    assert!(close(up.slope.unwrap(), 0.1, 1e-12), "{:?}", up.slope);
    assert_eq!(up.drift, Some("up"));

    // Two scored points: no slope, no drift.
    let short = series("x", "t", vec![Some(0.9), None, Some(0.1)], vec![]);
    assert_eq!((short.slope, short.drift), (None, None));

    // Steep slope but back to near the start: no drift.
    let dip = series(
        "x",
        "t",
        [0.9, 0.9, 0.9, 0.1, 0.1, 0.1, 0.85].map(Some).to_vec(),
        vec![],
    );
    assert!(dip.slope.unwrap() <= -0.05, "{:?}", dip.slope);
    assert_eq!(dip.drift, None);

    // A large drop but a gentle slope: no drift.
    let gentle = series(
        "x",
        "t",
        (0..10).map(|i| Some(0.9 - 0.03 * i as f64)).collect(),
        vec![],
    );
    assert!(close(gentle.slope.unwrap(), -0.03, 1e-12));
    assert_eq!(gentle.drift, None);

    let flat = series("x", "t", vec![Some(0.5); 6], vec![]);
    assert_eq!(flat.slope, Some(0.0));
    assert_eq!(flat.drift, None);
    assert_eq!(flat.test_id, "x");
    assert_eq!(flat.target, "t");
}
