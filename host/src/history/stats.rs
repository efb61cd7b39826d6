//! Placeholder until the statistics land (same API as the real module).
#![allow(missing_docs, dead_code)]

pub struct Side {
    pub scores: Vec<f64>,
    pub passed: Vec<bool>,
}
pub struct Pair {
    pub test_id: String,
    pub target: String,
    pub base: Side,
    pub cand: Side,
}
#[derive(serde::Serialize, Clone, Debug, PartialEq)]
pub struct TestDelta {
    pub test_id: String,
    pub target: String,
    pub base_score: f64,
    pub cand_score: f64,
    pub delta: f64,
    pub base_pass_rate: f64,
    pub cand_pass_rate: f64,
    pub base_passed: bool,
    pub cand_passed: bool,
    pub flip: Option<&'static str>,
    pub outcome: &'static str,
    pub normalized_gain: Option<f64>,
    pub base_trials: usize,
    pub cand_trials: usize,
}
#[derive(serde::Serialize, Clone, Debug, PartialEq)]
pub struct Interval {
    pub level: f64,
    pub low: f64,
    pub high: f64,
    pub resamples: usize,
    pub seed: u64,
}
#[derive(serde::Serialize, Clone, Debug, PartialEq)]
pub struct Summary {
    pub matched: usize,
    pub wins: usize,
    pub losses: usize,
    pub ties: usize,
    pub pass_to_fail: usize,
    pub fail_to_pass: usize,
    pub mean_base: f64,
    pub mean_cand: f64,
    pub mean_delta: f64,
    pub ci: Interval,
    pub flip_p_value: f64,
    pub delta_p_value: f64,
    pub significant: bool,
    pub verdict: &'static str,
    pub normalized_gain: Option<f64>,
}
pub struct Options {
    pub resamples: usize,
    pub seed: u64,
    pub level: f64,
    pub alpha: f64,
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
pub fn test_delta(_pair: &Pair) -> TestDelta {
    unimplemented!()
}
pub fn summarize(_deltas: &[TestDelta], _pairs: &[Pair], _options: &Options) -> Summary {
    unimplemented!()
}
#[derive(serde::Serialize, Clone, Debug, PartialEq)]
pub struct Series {
    pub test_id: String,
    pub target: String,
    pub scores: Vec<Option<f64>>,
    pub passed: Vec<Option<bool>>,
    pub flaps: usize,
    pub flaky: bool,
    pub slope: Option<f64>,
    pub drift: Option<&'static str>,
}
pub fn series(_t: &str, _g: &str, _s: Vec<Option<f64>>, _p: Vec<Option<bool>>) -> Series {
    unimplemented!()
}
