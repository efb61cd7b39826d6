//! CSV text as RFC 4180 reads it (quoted fields with `""` escapes and line
//! breaks), each record with its line: the parser the promptfoo and
//! AgentV 5 readers share.

/// RFC 4180 CSV: quoted fields with `""` escapes and line breaks.
pub(crate) fn parse_csv(text: &str) -> Result<Vec<Vec<String>>, String> {
    Ok(parse_csv_lines(text)?.into_iter().map(|(_, r)| r).collect())
}

/// [`parse_csv`], each record with the line it starts on (1-based).
pub(crate) fn parse_csv_lines(text: &str) -> Result<Vec<(usize, Vec<String>)>, String> {
    let mut records = Vec::new();
    let mut record = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    let mut line = 1;
    let mut start = 1;
    while let Some(c) = chars.next() {
        if quoted {
            match c {
                '"' if chars.peek() == Some(&'"') => {
                    chars.next();
                    field.push('"');
                }
                '"' => quoted = false,
                '\n' => {
                    line += 1;
                    field.push(c);
                }
                _ => field.push(c),
            }
            continue;
        }
        match c {
            '"' if field.is_empty() => quoted = true,
            ',' => record.push(std::mem::take(&mut field)),
            '\r' => {}
            '\n' => {
                record.push(std::mem::take(&mut field));
                records.push((start, std::mem::take(&mut record)));
                line += 1;
                start = line;
            }
            _ => field.push(c),
        }
    }
    if quoted {
        return Err(format!("a quoted field is not closed (line {line})"));
    }
    if !field.is_empty() || !record.is_empty() {
        record.push(field);
        records.push((start, record));
    }
    Ok(records)
}
