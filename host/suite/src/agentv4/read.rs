//! Reading a suite file: size caps, FIFOs and devices refused, UTF-8 and
//! control characters named by line and column, alias bombs refused
//! unexpanded, `${{ VAR }}` interpolated.

use super::*;
use crate::yaml::YamlErrorKind;

impl Loader {
    /// Reads a YAML file (size-capped), parses it and interpolates `${{ }}`.
    pub(super) fn read_yaml(
        &mut self,
        path: &Path,
        from: Option<(&Doc, &KeyPath)>,
    ) -> Option<(Value, Arc<Doc>)> {
        let display = Arc::new(if path == self.eval_display.as_path() {
            path.to_path_buf()
        } else {
            self.display(path)
        });
        let text = self.read_text(path, &display, from, MAX_FILE_BYTES)?;
        // YAML allows no control characters but tab and line breaks (and
        // NEL): name the first one by line and column.
        if let Some((i, c)) = text
            .char_indices()
            .find(|(_, c)| c.is_control() && !matches!(c, '\t' | '\n' | '\r' | '\u{85}'))
        {
            self.diags.push(
                Diagnostic::error(
                    &display,
                    format!("invalid YAML: the control character U+{:04X} is not allowed", c as u32),
                )
                .at(Some(position(&text[..i])))
                .hint("remove it; write it as an escape (\"\\u0000\") inside a double-quoted string if you need it"),
            );
            return None;
        }
        let (mut value, map) = match crate::yaml::parse_with_positions(&text) {
            Ok(parsed) => parsed,
            Err(err) if err.kind == YamlErrorKind::Limit => {
                // An alias bomb (`&a [*b, *b, ...]` nested) or a document
                // nested without end: refused before it is expanded.
                self.diags.push(
                    Diagnostic::error(&display, format!("invalid YAML: {}: the document expands (through anchors and aliases) or nests past the parser's limits", err.message))
                        .at(err.pos)
                        .hint(if err.message.contains("recursion") {
                            "a suite never nests this deep; look for brackets `[`/`{` or indentation opened without end at this line and column"
                        } else {
                            "a suite never needs this much repetition; look for `*alias` references nested inside anchors (a \"billion laughs\" document)"
                        }),
                );
                return None;
            }
            Err(err) => {
                let hint = match err.kind {
                    YamlErrorKind::Syntax => "check the indentation and quoting around this line",
                    _ => {
                        "write it as JSON can hold it: string keys, each key once, no custom `!tags`, one document"
                    }
                };
                self.diags.push(
                    Diagnostic::error(&display, format!("invalid YAML: {}", err.message))
                        .at(err.pos)
                        .hint(hint),
                );
                return None;
            }
        };
        let doc = Arc::new(Doc {
            display: display.clone(),
            dir: path.parent().map(Path::to_path_buf).unwrap_or_default(),
            map: Arc::new(map),
        });
        // `${{ VAR }}` needs a `$`, written as itself or as an escape in a
        // double-quoted string: without one there is nothing to walk.
        if ["$", "\\x24", "\\u0024", "\\U00000024"]
            .iter()
            .any(|s| text.contains(s))
        {
            self.interpolate(&mut value, &doc);
        }
        Some((value, doc))
    }

    pub(super) fn read_text(
        &mut self,
        path: &Path,
        display: &Path,
        from: Option<(&Doc, &KeyPath)>,
        cap: u64,
    ) -> Option<String> {
        let report = |loader: &mut Self, message: String| match from {
            Some((doc, key)) => {
                loader.error(doc, key, message);
            }
            None => loader.diags.push(Diagnostic::error(display, message).hint(
                "pass the path of an EVAL.yaml (or any .yaml suite, or a .jsonl file of cases)",
            )),
        };
        // A file another names must really be inside the project root (a
        // link out is refused), and only a regular file is read: a FIFO or
        // a device could block or never end.
        if from.is_some()
            && let Err(err) = self.roots.contain(path)
            && matches!(err, PathError::Outside { .. })
        {
            report(self, format!("{}: {err}", display.display()));
            return None;
        }
        match std::fs::metadata(path) {
            Ok(meta) if !meta.is_file() => {
                report(self, format!("{} is not a regular file", display.display()));
                return None;
            }
            Ok(meta) if meta.len() > cap => {
                report(
                    self,
                    format!(
                        "{} is {} MiB, more than the {} MiB a suite file may be",
                        display.display(),
                        meta.len() >> 20,
                        cap >> 20
                    ),
                );
                return None;
            }
            Ok(_) => {}
            Err(err) => {
                report(self, format!("cannot read {}: {err}", display.display()));
                return None;
            }
        }
        let bytes = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(err) => {
                report(self, format!("cannot read {}: {err}", display.display()));
                return None;
            }
        };
        // Say where: the first byte that is not UTF-8, by line and column.
        match String::from_utf8(bytes) {
            Ok(text) => Some(text),
            Err(err) => {
                let valid = &err.as_bytes()[..err.utf8_error().valid_up_to()];
                let pos = position(std::str::from_utf8(valid).unwrap_or_default());
                self.diags.push(
                    Diagnostic::error(display, format!("{} is not valid UTF-8", display.display()))
                        .at(Some(pos))
                        .hint("save it as UTF-8 text"),
                );
                None
            }
        }
    }

    pub(super) fn interpolate(&mut self, value: &mut Value, doc: &Doc) {
        let missing = self.env.interpolate(value);
        for name in missing {
            self.diags.push(
                Diagnostic::warning(
                    &doc.display,
                    format!("environment variable `{name}` is not set; `${{{{ {name} }}}}` became an empty string"),
                )
                .hint("export it, or add it to a .env file next to the eval file"),
            );
        }
    }
}

/// The line and column just after `before`, the text preceding a place.
pub(super) fn position(before: &str) -> Pos {
    Pos {
        line: before.matches('\n').count() + 1,
        col: before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1,
    }
}

/// Parses YAML text into JSON values, applying merge keys (`<<: *anchor`).
pub fn parse_yaml(text: &str) -> Result<Value, crate::yaml::YamlError> {
    crate::yaml::parse(text)
}
