//! `scenarios`, lowered as AgentV 5's `lowerScenariosIntoTests`: each
//! `config` row with each `tests` row.

use super::*;

impl Rewriter {
    /// `scenarios` lowered into tests as AgentV 5 does
    /// (`lowerScenariosIntoTests`): each `config` row with each of the
    /// scenario's `tests`, vars/metadata/options/run merged (the test's
    /// win), the config row's `assert` first.
    pub(super) fn scenarios(&mut self, value: &Value, at: &KeyPath) -> Vec<Value> {
        let Value::Array(items) = value else {
            self.error(at, "scenarios must be an array.");
            return Vec::new();
        };
        // `file://…` entries (globs allowed) hold a list of scenarios, or
        // `{scenarios: [...]}`.
        let mut scenarios: Vec<(Value, KeyPath)> = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let iat = at.index(i);
            match item {
                Value::String(spec) if spec.starts_with("file://") => {
                    for file in self.glob(&spec["file://".len()..], &iat) {
                        let shown = file.display().to_string();
                        let Some((_, v)) = self.yaml_file(&shown, &iat, "scenario file") else {
                            continue;
                        };
                        let list = match v {
                            Value::Array(a) => a,
                            Value::Object(mut o) => match o.remove("scenarios") {
                                Some(Value::Array(a)) => a,
                                _ => {
                                    self.error(&iat, format!("External scenario file must contain a scenario array or an object with a scenarios array: {shown}"));
                                    continue;
                                }
                            },
                            Value::Null => Vec::new(),
                            _ => {
                                self.error(&iat, format!("External scenario file must contain a scenario array or an object with a scenarios array: {shown}"));
                                continue;
                            }
                        };
                        scenarios.extend(list.into_iter().map(|s| (s, iat.clone())));
                    }
                }
                other => scenarios.push((other.clone(), iat)),
            }
        }
        let mut out = Vec::new();
        for (si, (scenario, sat)) in scenarios.iter().enumerate() {
            let Value::Object(sc) = scenario else {
                self.error(sat, format!("scenarios[{si}] must be an object."));
                continue;
            };
            let (Some(Value::Array(configs)), Some(Value::Array(tests))) =
                (sc.get("config"), sc.get("tests"))
            else {
                self.error(
                    sat,
                    format!("scenarios[{si}] needs `config` and `tests`, each an array."),
                );
                continue;
            };
            for (ci, config) in configs.iter().enumerate() {
                let Value::Object(config) = config else {
                    self.error(
                        sat,
                        format!("scenarios[{si}].config[{ci}] must be an object."),
                    );
                    continue;
                };
                for (ti, test) in tests.iter().enumerate() {
                    let Value::Object(test) = test else {
                        self.error(
                            sat,
                            format!("scenarios[{si}].tests[{ti}] must be an object."),
                        );
                        continue;
                    };
                    out.push(Value::Object(merge_scenario_row(
                        config,
                        test,
                        (si, ci, ti),
                        tests.len(),
                    )));
                }
            }
        }
        out
    }
}

/// AgentV 5's `mergeScenarioTestRows`.
pub(super) fn merge_scenario_row(
    config: &Map<String, Value>,
    test: &Map<String, Value>,
    (si, ci, ti): (usize, usize, usize),
    test_count: usize,
) -> Map<String, Value> {
    let mut row = config.clone();
    row.extend(test.clone());
    for key in ["vars", "metadata", "options", "run"] {
        let mut merged = Map::new();
        if let Some(Value::Object(c)) = config.get(key) {
            merged.extend(c.clone());
        }
        if let Some(Value::Object(t)) = test.get(key) {
            merged.extend(t.clone());
        }
        if merged.is_empty() {
            row.remove(key);
        } else {
            row.insert(key.into(), Value::Object(merged));
        }
    }
    let as_list = |v: Option<&Value>| -> Vec<Value> {
        match v {
            Some(Value::Array(a)) => a.clone(),
            Some(Value::Null) | None => Vec::new(),
            Some(other) => vec![other.clone()],
        }
    };
    let asserts: Vec<Value> = as_list(config.get("assert"))
        .into_iter()
        .chain(as_list(test.get("assert")))
        .collect();
    if asserts.is_empty() {
        row.remove("assert");
    } else {
        row.insert("assert".into(), Value::Array(asserts));
    }
    let nonempty = |v: Option<&Value>| {
        v.and_then(Value::as_str)
            .filter(|s| !s.trim().is_empty())
            .map(str::to_owned)
    };
    let id = match (nonempty(test.get("id")), nonempty(config.get("id"))) {
        (Some(id), _) => id,
        (None, Some(cid)) if test_count > 1 => format!("{cid}__scenario_test_{}", ti + 1),
        (None, Some(cid)) => cid,
        (None, None) => format!("scenario-{}-{}-{}", si + 1, ci + 1, ti + 1),
    };
    row.insert("id".into(), Value::String(id));
    row
}
