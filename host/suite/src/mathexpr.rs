//! The arithmetic promptfoo's `derivedMetrics` are written in: the subset of
//! mathjs expressions over metric names that its documentation and
//! examples use — numbers, names, `+ - * / % ^` (`^` binds tighter than
//! unary minus and is right-associative, as in mathjs), parentheses, and the
//! functions `abs`, `ceil`, `exp`, `floor`, `log` (natural, or with a base),
//! `log10`, `log2`, `max`, `min`, `pow`, `round`, `sqrt`, `mean`, `sum`.
//! Anything else is refused when the config is read, naming what, so a
//! metric never silently stays 0 as it does in promptfoo when mathjs throws.

use std::collections::HashMap;

/// A parsed expression.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// A number.
    Num(f64),
    /// A metric name.
    Name(String),
    /// `-x`.
    Neg(Box<Expr>),
    /// `a op b`.
    Bin(char, Box<Expr>, Box<Expr>),
    /// `f(args)`.
    Call(String, Vec<Expr>),
}

const FUNCTIONS: &[&str] = &[
    "abs", "ceil", "exp", "floor", "log", "log10", "log2", "max", "min", "pow", "round", "sqrt",
    "mean", "sum",
];

/// Parses `text`.
pub fn parse(text: &str) -> Result<Expr, String> {
    let tokens = tokenize(text)?;
    let mut p = Parser { tokens, pos: 0 };
    let e = p.expr()?;
    if p.pos != p.tokens.len() {
        return Err(format!("unexpected `{}`", p.tokens[p.pos].show()));
    }
    Ok(e)
}

impl Expr {
    /// The names the expression reads.
    pub fn names(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.collect(&mut out);
        out
    }

    fn collect(&self, out: &mut Vec<String>) {
        match self {
            Self::Num(_) => {}
            Self::Name(n) => out.push(n.clone()),
            Self::Neg(e) => e.collect(out),
            Self::Bin(_, a, b) => {
                a.collect(out);
                b.collect(out);
            }
            Self::Call(_, args) => args.iter().for_each(|a| a.collect(out)),
        }
    }

    /// The value with `vars`; `None` where a name is missing.
    pub fn eval(&self, vars: &HashMap<String, f64>) -> Option<f64> {
        Some(match self {
            Self::Num(n) => *n,
            Self::Name(n) => *vars.get(n)?,
            Self::Neg(e) => -e.eval(vars)?,
            Self::Bin(op, a, b) => {
                let (a, b) = (a.eval(vars)?, b.eval(vars)?);
                match op {
                    '+' => a + b,
                    '-' => a - b,
                    '*' => a * b,
                    '/' => a / b,
                    // mathjs' `mod` keeps the divisor's sign.
                    '%' => {
                        if b == 0.0 {
                            a
                        } else {
                            a - b * (a / b).floor()
                        }
                    }
                    _ => a.powf(b),
                }
            }
            Self::Call(f, args) => {
                let v: Vec<f64> = args.iter().map(|a| a.eval(vars)).collect::<Option<_>>()?;
                match (f.as_str(), v.as_slice()) {
                    ("abs", [x]) => x.abs(),
                    ("ceil", [x]) => x.ceil(),
                    ("exp", [x]) => x.exp(),
                    ("floor", [x]) => x.floor(),
                    ("log", [x]) => x.ln(),
                    ("log", [x, base]) => x.ln() / base.ln(),
                    ("log10", [x]) => x.log10(),
                    ("log2", [x]) => x.log2(),
                    ("pow", [x, y]) => x.powf(*y),
                    // mathjs rounds half away from zero.
                    ("round", [x]) => x.round(),
                    ("round", [x, n]) => {
                        let k = 10f64.powi(*n as i32);
                        (x * k).round() / k
                    }
                    ("sqrt", [x]) => x.sqrt(),
                    ("max", xs) if !xs.is_empty() => {
                        xs.iter().copied().fold(f64::NEG_INFINITY, f64::max)
                    }
                    ("min", xs) if !xs.is_empty() => {
                        xs.iter().copied().fold(f64::INFINITY, f64::min)
                    }
                    ("sum", xs) => xs.iter().sum(),
                    ("mean", xs) if !xs.is_empty() => xs.iter().sum::<f64>() / xs.len() as f64,
                    _ => return None,
                }
            }
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(f64),
    Name(String),
    Op(char),
}

impl Tok {
    fn show(&self) -> String {
        match self {
            Self::Num(n) => n.to_string(),
            Self::Name(n) => n.clone(),
            Self::Op(c) => c.to_string(),
        }
    }
}

fn tokenize(text: &str) -> Result<Vec<Tok>, String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_digit()
            || (c == '.' && chars.get(i + 1).is_some_and(char::is_ascii_digit))
        {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == '.') {
                i += 1;
            }
            if i < chars.len() && (chars[i] == 'e' || chars[i] == 'E') {
                let mut j = i + 1;
                if j < chars.len() && (chars[j] == '+' || chars[j] == '-') {
                    j += 1;
                }
                if j < chars.len() && chars[j].is_ascii_digit() {
                    i = j;
                    while i < chars.len() && chars[i].is_ascii_digit() {
                        i += 1;
                    }
                }
            }
            let s: String = chars[start..i].iter().collect();
            out.push(Tok::Num(
                s.parse().map_err(|_| format!("`{s}` is not a number"))?,
            ));
        } else if c.is_alphabetic() || c == '_' || c == '$' {
            let start = i;
            while i < chars.len()
                && (chars[i].is_alphanumeric() || chars[i] == '_' || chars[i] == '$')
            {
                i += 1;
            }
            out.push(Tok::Name(chars[start..i].iter().collect()));
        } else if "+-*/%^(),".contains(c) {
            out.push(Tok::Op(c));
            i += 1;
        } else {
            return Err(format!(
                "`{c}` is not part of the arithmetic evalhost evaluates"
            ));
        }
    }
    Ok(out)
}

struct Parser {
    tokens: Vec<Tok>,
    pos: usize,
}

impl Parser {
    fn peek_op(&self) -> Option<char> {
        match self.tokens.get(self.pos) {
            Some(Tok::Op(c)) => Some(*c),
            _ => None,
        }
    }

    fn expr(&mut self) -> Result<Expr, String> {
        let mut left = self.term()?;
        while let Some(op @ ('+' | '-')) = self.peek_op() {
            self.pos += 1;
            let right = self.term()?;
            left = Expr::Bin(op, Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn term(&mut self) -> Result<Expr, String> {
        let mut left = self.unary()?;
        while let Some(op @ ('*' | '/' | '%')) = self.peek_op() {
            self.pos += 1;
            let right = self.unary()?;
            left = Expr::Bin(op, Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn unary(&mut self) -> Result<Expr, String> {
        match self.peek_op() {
            Some('-') => {
                self.pos += 1;
                Ok(Expr::Neg(Box::new(self.unary()?)))
            }
            Some('+') => {
                self.pos += 1;
                self.unary()
            }
            _ => self.power(),
        }
    }

    fn power(&mut self) -> Result<Expr, String> {
        let base = self.atom()?;
        if self.peek_op() == Some('^') {
            self.pos += 1;
            // Right-associative; the exponent may carry a sign.
            let exp = self.unary()?;
            return Ok(Expr::Bin('^', Box::new(base), Box::new(exp)));
        }
        Ok(base)
    }

    fn atom(&mut self) -> Result<Expr, String> {
        match self.tokens.get(self.pos).cloned() {
            Some(Tok::Num(n)) => {
                self.pos += 1;
                Ok(Expr::Num(n))
            }
            Some(Tok::Name(n)) => {
                self.pos += 1;
                if self.peek_op() == Some('(') {
                    if !FUNCTIONS.contains(&n.as_str()) {
                        return Err(format!(
                            "`{n}(…)` is not one of the functions evalhost evaluates ({})",
                            FUNCTIONS.join(", ")
                        ));
                    }
                    self.pos += 1;
                    let mut args = Vec::new();
                    if self.peek_op() != Some(')') {
                        loop {
                            args.push(self.expr()?);
                            match self.peek_op() {
                                Some(',') => self.pos += 1,
                                Some(')') => break,
                                _ => return Err(format!("`{n}(`: expected `,` or `)`")),
                            }
                        }
                    }
                    self.pos += 1;
                    Ok(Expr::Call(n, args))
                } else {
                    Ok(Expr::Name(n))
                }
            }
            Some(Tok::Op('(')) => {
                self.pos += 1;
                let e = self.expr()?;
                if self.peek_op() != Some(')') {
                    return Err("a `(` is not closed".into());
                }
                self.pos += 1;
                Ok(e)
            }
            Some(t) => Err(format!("unexpected `{}`", t.show())),
            None => Err("the expression ends too early".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(s: &str, vars: &[(&str, f64)]) -> f64 {
        let v: HashMap<String, f64> = vars.iter().map(|(k, x)| ((*k).to_owned(), *x)).collect();
        parse(s).unwrap().eval(&v).unwrap()
    }

    #[test]
    fn mathjs_precedence_and_functions() {
        assert_eq!(
            eval(
                "hits * 2 + style ^ 2 - max(hits, style)",
                &[("hits", 3.0), ("style", 4.5)]
            ),
            21.75
        );
        assert_eq!(eval("-2 ^ 2", &[]), -4.0);
        assert_eq!(eval("2 ^ 3 ^ 2", &[]), 512.0);
        assert_eq!(eval("2 ^ -1", &[]), 0.5);
        assert_eq!(
            eval(
                "(a + b) / __count",
                &[("a", 1.0), ("b", 2.0), ("__count", 4.0)]
            ),
            0.75
        );
        assert_eq!(eval("-7 % 3", &[]), 2.0);
        assert_eq!(
            eval("round(2.345, 2) + sqrt(16) + log(8, 2)", &[]),
            2.35 + 4.0 + 3.0
        );
        assert_eq!(eval("1.5e2", &[]), 150.0);
    }

    #[test]
    fn what_is_not_arithmetic_is_refused() {
        assert!(parse("a ? b : c").is_err());
        assert!(parse("foo(1)").unwrap_err().contains("`foo(…)`"));
        assert!(parse("(a + 1").is_err());
        assert!(parse("a b").is_err());
        assert_eq!(parse("a + b * c").unwrap().names(), ["a", "b", "c"]);
    }
}
