//! One rubric criterion, as the rubric parser reads it and the prompts
//! show it.

/// One criterion.
#[derive(Debug, Clone, PartialEq)]
pub struct Criterion {
    /// Its id (`rubric-<n>` by default).
    pub id: String,
    /// What a good answer does.
    pub outcome: String,
    /// Its weight.
    pub weight: f64,
    /// A gate: failing it fails the rubric.
    pub required: bool,
    /// The normalised score it must reach (score ranges).
    pub min_score: Option<f64>,
    /// `(min, max, outcome)` ranges over 0..=10.
    pub score_ranges: Vec<(u8, u8, String)>,
}
