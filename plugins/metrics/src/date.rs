//! Calendar dates for `field-accuracy`'s `date` match: the formats
//! AgentV 4.42 accepts through JavaScript's `new Date(...)` (ISO dates and
//! date-times, `y-m-d` with `-`, `/` or `.`, month-first `m/d/y`, dates
//! with month names, two-digit years), then its own fallbacks (`15-Jan-2025`,
//! and `dd/mm/yyyy` or `mm/dd/yyyy` by the field's `formats`). Dates compare
//! as UTC calendar days; a day past the month's end rolls over as in
//! JavaScript (`2025-02-30` is March 2). Free text that merely contains a
//! year (`hello 2025`), which V8 would accept, is refused.

/// A calendar date.
pub type Ymd = (i64, u32, u32);

const MONTHS: &[(&str, u32)] = &[
    ("january", 1),
    ("february", 2),
    ("march", 3),
    ("april", 4),
    ("may", 5),
    ("june", 6),
    ("july", 7),
    ("august", 8),
    ("september", 9),
    ("sept", 9),
    ("october", 10),
    ("november", 11),
    ("december", 12),
];
const WEEKDAYS: &[&str] = &[
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
];

/// Days since 1970-01-01 of a proleptic Gregorian date (Hinnant's algorithm).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> Ymd {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// `y-m-d` with day overflow rolled into later months; `None` for a month
/// outside 1..=12 or a day outside 1..=31.
fn date(y: i64, m: u32, d: u32) -> Option<Ymd> {
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    Some(civil_from_days(days_from_civil(y, m, 1) + i64::from(d) - 1))
}

fn shift(ymd: Ymd, days: i64) -> Ymd {
    civil_from_days(days_from_civil(ymd.0, ymd.1, ymd.2) + days)
}

fn month_named(word: &str) -> Option<u32> {
    let w = word.to_ascii_lowercase();
    if w.len() < 3 {
        return None;
    }
    MONTHS
        .iter()
        .find(|(name, _)| name.starts_with(&w))
        .map(|(_, m)| *m)
}

fn two_digit_year(y: i64, digits: usize) -> i64 {
    match digits {
        1 | 2 if y < 50 => 2000 + y,
        1 | 2 => 1900 + y,
        _ => y,
    }
}

fn digits(s: &str) -> Option<(i64, usize)> {
    (!s.is_empty() && s.len() <= 6 && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok().map(|n| (n, s.len())))
        .flatten()
}

/// `hh:mm[:ss[.fff]]` → minutes past midnight.
fn clock(s: &str) -> Option<i64> {
    let mut parts = s.split(':');
    let h: i64 = parts.next()?.parse().ok()?;
    let m: i64 = parts.next()?.parse().ok()?;
    if let Some(sec) = parts.next() {
        let whole = sec.split('.').next()?;
        let sec: i64 = whole.parse().ok()?;
        if sec > 59 {
            return None;
        }
    }
    if parts.next().is_some() || h > 24 || m > 59 || (h == 24 && m > 0) {
        return None;
    }
    Some(h * 60 + m)
}

/// ISO 8601 (`2025-01-15`, `2025-01-15T10:00:00.123+05:00`, `2025-01-15 10:00`,
/// `2025`, `2025-01`), as UTC calendar days.
fn iso(s: &str) -> Option<Ymd> {
    let (date_part, time_part) = match s.find(['T', ' ']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s.strip_suffix('Z').unwrap_or(s), None),
    };
    let signed = date_part.starts_with(['+', '-']);
    let sign = if date_part.starts_with('-') { -1 } else { 1 };
    let body = if signed { &date_part[1..] } else { date_part };
    let mut fields = body.split('-');
    let year = fields.next()?;
    if !(year.len() == 4 || (year.len() == 6 && signed))
        || !year.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let y = sign * year.parse::<i64>().ok()?;
    let m: u32 = match fields.next() {
        Some(f) if f.len() == 2 => f.parse().ok()?,
        Some(_) => return None,
        None => 1,
    };
    let d: u32 = match fields.next() {
        Some(f) if f.len() == 2 => f.parse().ok()?,
        Some(_) => return None,
        None => 1,
    };
    if fields.next().is_some() {
        return None;
    }
    let day = date(y, m, d)?;
    let Some(time) = time_part else {
        return Some(day);
    };
    let (time, offset) = if let Some(t) = time.strip_suffix('Z') {
        (t, 0)
    } else if let Some(i) = time.rfind(['+', '-']) {
        let (t, off) = time.split_at(i);
        let sign = if off.starts_with('-') { -1 } else { 1 };
        let off = &off[1..];
        let (oh, om) = match off.split_once(':') {
            Some((h, m)) => (h.parse::<i64>().ok()?, m.parse::<i64>().ok()?),
            None if off.len() == 4 => (off[..2].parse().ok()?, off[2..].parse().ok()?),
            None => return None,
        };
        (t, sign * (oh * 60 + om))
    } else {
        (time, 0)
    };
    let minutes = clock(time)? - offset;
    Some(shift(day, minutes.div_euclid(24 * 60)))
}

/// Numeric dates with separators: `y-m-d` (`2025-1-5`, `2025/1/5`,
/// `2025.01.15`) and month-first `m/d/y` or `m-d-y` (`1/15/2025`, `1/2/25`).
fn numeric(s: &str) -> Option<Ymd> {
    let sep = s.chars().find(|c| matches!(c, '-' | '/' | '.'))?;
    let parts: Vec<&str> = s.split(sep).collect();
    if parts.len() != 3 {
        return None;
    }
    let (a, b, c) = (digits(parts[0])?, digits(parts[1])?, digits(parts[2])?);
    if a.1 >= 3 {
        return date(a.0, u32::try_from(b.0).ok()?, u32::try_from(c.0).ok()?);
    }
    if sep == '.' {
        return None;
    }
    date(
        two_digit_year(c.0, c.1),
        u32::try_from(a.0).ok()?,
        u32::try_from(b.0).ok()?,
    )
}

/// Dates with a month name: `Jan 15 2025`, `January 15, 2025 10:00 PM`,
/// `15 January 2025`, `Wednesday, January 15, 2025`, `15-Jan-2025`,
/// `15-JAN-25`, `Jan 2025`.
fn named(s: &str) -> Option<Ymd> {
    let mut month = None;
    let mut numbers: Vec<(i64, usize)> = Vec::new();
    for token in s.split(|c: char| c.is_whitespace() || c == ',' || c == '-' || c == '/') {
        if token.is_empty() {
            continue;
        }
        let lower = token.to_ascii_lowercase();
        if token.contains(':') {
            clock(token)?;
            continue;
        }
        if lower == "am"
            || lower == "pm"
            || WEEKDAYS
                .iter()
                .any(|w| w.starts_with(&lower) && lower.len() >= 3)
        {
            continue;
        }
        if let Some(m) = month_named(token) {
            if month.replace(m).is_some() {
                return None;
            }
            continue;
        }
        numbers.push(digits(token)?);
    }
    let month = month?;
    let (day, year) = match numbers.as_slice() {
        [y] if y.1 == 4 => ((1, 1), *y),
        [d, y] if d.1 <= 2 => (*d, *y),
        [y, d] if y.1 == 4 && d.1 <= 2 => (*d, *y),
        _ => return None,
    };
    date(
        two_digit_year(year.0, year.1),
        month,
        u32::try_from(day.0).ok()?,
    )
}

/// `d/d/yyyy` that month-first reading refused: read by `formats` (AgentV's
/// fallback): only day-first, only month-first, or whichever fits.
fn by_formats(s: &str, formats: &[String]) -> Option<Ymd> {
    let sep = s.chars().find(|c| matches!(c, '-' | '/'))?;
    let parts: Vec<&str> = s.split(sep).collect();
    let [a, b, y] = parts.as_slice() else {
        return None;
    };
    let (a, a_len) = digits(a)?;
    let (b, b_len) = digits(b)?;
    let (y, y_len) = digits(y)?;
    if a_len > 2 || b_len > 2 || y_len != 4 {
        return None;
    }
    let us = formats
        .iter()
        .any(|f| f.contains("MM/DD") || f.contains("MM-DD"));
    let eu = formats
        .iter()
        .any(|f| f.contains("DD/MM") || f.contains("DD-MM"));
    let (m, d) = match (us, eu) {
        (true, false) => (a, b),
        (false, true) => (b, a),
        _ if a > 12 && b <= 12 => (b, a),
        _ => (a, b),
    };
    date(y, u32::try_from(m).ok()?, u32::try_from(d).ok()?)
}

/// The calendar date `text` names, if any.
pub fn parse(text: &str, formats: &[String]) -> Option<Ymd> {
    let s = text.trim();
    if s.is_empty() {
        return None;
    }
    iso(s)
        .or_else(|| numeric(s))
        .or_else(|| named(s))
        .or_else(|| by_formats(s, formats))
}

/// `2025-01-15`.
pub fn show((y, m, d): Ymd) -> String {
    format!("{y:04}-{m:02}-{d:02}")
}

/// AgentV's default `formats`.
pub fn default_formats() -> Vec<String> {
    [
        "YYYY-MM-DDTHH:mm:ssZ",
        "YYYY-MM-DDTHH:mm:ss",
        "YYYY-MM-DD",
        "DD-MMM-YYYY",
        "MM/DD/YYYY",
        "DD/MM/YYYY",
        "MM-DD-YYYY",
        "DD-MM-YYYY",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Option<String> {
        parse(s, &default_formats()).map(show)
    }

    #[test]
    fn what_javascript_accepts() {
        for (input, expected) in [
            ("2025-01-15", "2025-01-15"),
            ("2025-01-15T10:00", "2025-01-15"),
            ("2025-01-15 10:00:00", "2025-01-15"),
            ("2025-01-15T10:00:00.123+05:00", "2025-01-15"),
            ("2025-01-15T02:00:00+05:00", "2025-01-14"),
            ("2025-01-15Z", "2025-01-15"),
            ("+002025-01-15", "2025-01-15"),
            ("2025-1-15", "2025-01-15"),
            ("2025-01-5", "2025-01-05"),
            ("2025/1/5", "2025-01-05"),
            ("2025.01.15", "2025-01-15"),
            ("01/15/2025", "2025-01-15"),
            ("1/15/2025", "2025-01-15"),
            ("01-15-2025", "2025-01-15"),
            ("01/02/2025", "2025-01-02"),
            ("1/2/25", "2025-01-02"),
            ("1/2/49", "2049-01-02"),
            ("1/2/50", "1950-01-02"),
            ("Jan 15 2025", "2025-01-15"),
            ("15 January 2025", "2025-01-15"),
            ("Jan-15-2025", "2025-01-15"),
            ("15-Jan-2025", "2025-01-15"),
            ("15-JAN-25", "2025-01-15"),
            ("Wednesday, January 15, 2025", "2025-01-15"),
            ("January 15, 2025 10:00 PM", "2025-01-15"),
            ("2025", "2025-01-01"),
            ("2025-01", "2025-01-01"),
            ("Jan 2025", "2025-01-01"),
            ("2025-02-30", "2025-03-02"),
            ("02/30/2025", "2025-03-02"),
            ("2025-02-29", "2025-03-01"),
            ("15/01/2025", "2025-01-15"),
            ("15-01-2025", "2025-01-15"),
        ] {
            assert_eq!(p(input).as_deref(), Some(expected), "{input}");
        }
    }

    #[test]
    fn what_it_refuses() {
        for input in [
            "15.01.2025",
            "13/13/2025",
            "15th Jan 2025",
            "2025-13-01",
            "2025-01-15T25:00:00",
            "20250115",
            "true",
            "",
            "hello 2025",
        ] {
            assert_eq!(p(input), None, "{input}");
        }
    }

    #[test]
    fn formats_decide_day_or_month_first_only_for_what_javascript_refuses() {
        let eu = vec!["DD/MM/YYYY".to_owned()];
        let us = vec!["MM/DD/YYYY".to_owned()];
        assert_eq!(
            parse("01/02/2025", &eu).map(show).as_deref(),
            Some("2025-01-02")
        );
        assert_eq!(
            parse("15/01/2025", &eu).map(show).as_deref(),
            Some("2025-01-15")
        );
        assert_eq!(parse("15/01/2025", &us), None);
    }
}
