use super::*;

fn row(test_index: usize, trial: Option<u32>) -> String {
    format!(
        r#"{{"timestamp":"t","test_id":"t{test_index}","suite":"s","target":"default","test_index":{test_index},"trial":{},"status":"passed","score":1.0,"threshold":0.8,"execution_status":"ok","wall_ms":1,"output":"x","scores":[]}}"#,
        trial.map_or("null".to_owned(), |t| t.to_string())
    )
}

#[test]
fn rows_are_sorted_in_place_and_damaged_lines_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let lines = [
        row(2, None),
        row(0, Some(2)),
        "{torn".to_owned(),
        row(0, Some(1)),
        row(1, None),
    ];
    std::fs::write(dir.path().join("results.jsonl"), lines.join("\n") + "\n").unwrap();
    let mut writer = ResultsWriter::create(dir.path()).unwrap();
    writer.sort_in_place().unwrap();
    let mut order = Vec::new();
    let dropped = for_each_row(writer.path(), |r| order.push((r.test_index, r.trial))).unwrap();
    assert_eq!(dropped, 0);
    assert_eq!(order, [(0, Some(1)), (0, Some(2)), (1, None), (2, None)]);
    // Appending after the rewrite goes to the new file.
    let mut extra: ResultRow = serde_json::from_str(&row(3, None)).unwrap();
    extra.test_id = "t3".into();
    writer.append(&extra).unwrap();
    writer.flush().unwrap();
    let mut n = 0;
    for_each_row(writer.path(), |_| n += 1).unwrap();
    assert_eq!(n, 5);
}

#[test]
fn a_score_outside_the_unit_range_is_read_only_as_a_plugins_own() {
    let row = |details: &str, score: f64, row_score: f64| -> ResultRow {
        serde_json::from_str(&format!(
            r#"{{"timestamp":"t","test_id":"t","suite":"s","target":"default","test_index":0,"status":"passed","score":{row_score},"execution_status":"ok","wall_ms":1,"output":"x","scores":[{{"name":"js","type":"javascript","score":{score},"weight":1.0,"verdict":"pass","assertions":[],"plugin":"p","plugin_digest":"d","duration_us":0{details}}}]}}"#
        ))
        .unwrap()
    };
    // promptfoo's 26, reported by the plugin: an honest row.
    assert_eq!(
        row(r#","details":{"raw_score":26.0}"#, 26.0, 26.0).check(),
        Ok(())
    );
    // The same number without the plugin saying so, or a row score that is
    // not the mean of it: refused.
    assert!(row("", 26.0, 26.0).check().is_err());
    assert!(
        row(r#","details":{"raw_score":26.0}"#, 26.0, 30.0)
            .check()
            .is_err()
    );
    assert!(
        row(r#","details":{"raw_score":26.0}"#, 3.0, 3.0)
            .check()
            .is_err()
    );
}
