//! A Nunjucks template rewritten as a minijinja template that means what
//! Nunjucks means: parsed by minijinja's parser (the two languages share
//! their grammar), then printed back with every construct whose meaning
//! differs turned into a call of a function that has Nunjucks' meaning —
//! comparisons and arithmetic (`__nj_op`), truthiness (`__nj_truthy`),
//! property lookup (`__nj_item`), `in` (`__nj_in`), loops (`__nj_iter`,
//! `__nj_pairs`) — and every construct Nunjucks does not have, or that
//! evalhost cannot give Nunjucks' meaning, refused with its line.

use std::collections::HashSet;
use std::fmt::Write as _;

use minijinja::Value;
use minijinja::machinery::{WhitespaceConfig, ast, parse};
use minijinja::value::ValueKind;

/// Every refusal's message says this, so that a caller tells a refusal
/// (evalhost cannot render what Nunjucks renders) from a template that
/// fails in Nunjucks too.
pub const REFUSED: &str = "evalhost renders Nunjucks templates as Nunjucks does or not at all";

/// Why a template is refused: what, and on which line of the template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// 1-based line within the template.
    pub line: usize,
    /// What Nunjucks does that evalhost does not.
    pub message: String,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {} of the template: {}", self.line, self.message)
    }
}

/// Nunjucks spellings minijinja's parser does not read, replaced by ones of
/// the same length before parsing: `===` and `!==` (their places kept, so
/// that the printer makes them strict), `elseif` (Nunjucks' alias of
/// `elif`), `null` stays a name and is bound to none.
struct Prepared {
    source: String,
    strict: Vec<usize>,
}

fn prepare(template: &str) -> Prepared {
    let bytes = template.as_bytes();
    let mut out = String::with_capacity(template.len());
    let mut strict = Vec::new();
    let mut i = 0;
    // Inside a tag (`{{ … }}`, `{% … %}`) and not inside a string literal.
    let mut in_tag: Option<&str> = None;
    let mut quote: Option<u8> = None;
    while i < bytes.len() {
        let rest = &template[i..];
        match in_tag {
            None => {
                if rest.starts_with("{{") || rest.starts_with("{%") {
                    in_tag = Some(if rest.starts_with("{{") { "}}" } else { "%}" });
                    out.push_str(&rest[..2]);
                    i += 2;
                    // `{% raw %}` … `{% endraw %}` is text.
                    let tag = rest[2..].trim_start_matches('-').trim_start();
                    if in_tag == Some("%}")
                        && (tag.starts_with("raw") || tag.starts_with("verbatim"))
                        && let Some(end) = rest.find("endraw").or_else(|| rest.find("endverbatim"))
                    {
                        let close = rest[end..].find("%}").map_or(rest.len(), |c| end + c + 2);
                        out.push_str(&rest[2..close]);
                        i += close - 2;
                        in_tag = None;
                    }
                    continue;
                }
                if rest.starts_with("{#") {
                    let end = rest.find("#}").map_or(rest.len(), |e| e + 2);
                    out.push_str(&rest[..end]);
                    i += end;
                    continue;
                }
            }
            Some(close) => {
                let c = bytes[i];
                if let Some(q) = quote {
                    if c == b'\\' && i + 1 < bytes.len() {
                        out.push_str(&template[i..i + 2]);
                        i += 2;
                        continue;
                    }
                    if c == q {
                        quote = None;
                    }
                } else if c == b'"' || c == b'\'' {
                    quote = Some(c);
                } else if rest.starts_with(close) {
                    in_tag = None;
                    out.push_str(close);
                    i += 2;
                    continue;
                } else if rest.starts_with("===") || rest.starts_with("!==") {
                    strict.push(out.len());
                    out.push_str(if rest.starts_with('=') { "== " } else { "!= " });
                    i += 3;
                    continue;
                } else if rest.starts_with("elseif")
                    && !rest[6..].starts_with(|c: char| c.is_alphanumeric() || c == '_')
                    && out.trim_end_matches([' ', '-']).ends_with("{%")
                {
                    out.push_str("elif  ");
                    i += 6;
                    continue;
                }
            }
        }
        let ch = rest.chars().next().unwrap_or(' ');
        out.push(ch);
        i += ch.len_utf8();
    }
    Prepared {
        source: out,
        strict,
    }
}

/// `template` as a minijinja template with Nunjucks' meaning, or why it
/// cannot be one; a template that does not parse gives minijinja's error.
pub fn translate(template: &str) -> Result<String, TranslateError> {
    let prepared = prepare(template);
    let ws = WhitespaceConfig {
        keep_trailing_newline: true,
        lstrip_blocks: false,
        trim_blocks: false,
    };
    let tree = parse(
        &prepared.source,
        "<template>",
        minijinja::syntax::SyntaxConfig,
        ws,
    )
    .map_err(|e| TranslateError::Syntax(e.to_string()))?;
    let mut printer = Printer {
        strict: &prepared.strict,
        out: String::with_capacity(template.len() + 64),
        loop_depth: 0,
        macro_depth: 0,
        top_sets: HashSet::new(),
    };
    printer.stmt(&tree).map_err(TranslateError::Refused)?;
    Ok(printer.out)
}

/// A template that cannot be rendered as Nunjucks renders it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TranslateError {
    /// It does not parse (minijinja's message).
    Syntax(String),
    /// It parses, but uses what evalhost does not give Nunjucks' meaning.
    Refused(Refusal),
}

impl std::fmt::Display for TranslateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TranslateError::Syntax(e) => write!(f, "{e}"),
            TranslateError::Refused(r) => {
                write!(f, "{r} ({REFUSED}; see docs/dialects.md, \"Templates\")")
            }
        }
    }
}

struct Printer<'p> {
    strict: &'p [usize],
    out: String,
    loop_depth: usize,
    macro_depth: usize,
    /// Names a `{% set %}` outside every loop and macro assigns.
    top_sets: HashSet<String>,
}

type Printed = Result<(), Refusal>;

fn refuse(span: minijinja::machinery::Span, message: impl Into<String>) -> Refusal {
    Refusal {
        line: usize::from(span.start_line),
        message: message.into(),
    }
}

fn expr_span(e: &ast::Expr<'_>) -> minijinja::machinery::Span {
    match e {
        ast::Expr::Var(s) => s.span(),
        ast::Expr::Const(s) => s.span(),
        ast::Expr::Slice(s) => s.span(),
        ast::Expr::UnaryOp(s) => s.span(),
        ast::Expr::BinOp(s) => s.span(),
        ast::Expr::Compare(s) => s.span(),
        ast::Expr::IfExpr(s) => s.span(),
        ast::Expr::Filter(s) => s.span(),
        ast::Expr::Test(s) => s.span(),
        ast::Expr::GetAttr(s) => s.span(),
        ast::Expr::GetItem(s) => s.span(),
        ast::Expr::Call(s) => s.span(),
        ast::Expr::List(s) => s.span(),
        ast::Expr::Map(s) => s.span(),
    }
}

/// A string as a minijinja string literal.
fn quote(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A constant as a literal.
fn literal(v: &Value, out: &mut String) {
    match v.kind() {
        ValueKind::None | ValueKind::Undefined => out.push_str("none"),
        ValueKind::Bool => out.push_str(if v.is_true() { "true" } else { "false" }),
        ValueKind::Number => {
            if let Some(i) = v.as_i64() {
                let _ = write!(out, "{i}");
            } else if let Ok(f) = f64::try_from(v.clone()) {
                if f.is_finite() {
                    let _ = write!(out, "{f:?}");
                } else {
                    out.push_str("none");
                }
            } else {
                let _ = write!(out, "{v}");
            }
        }
        ValueKind::String => quote(v.as_str().unwrap_or_default(), out),
        ValueKind::Seq => {
            out.push('[');
            for (i, item) in v.try_iter().into_iter().flatten().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                literal(&item, out);
            }
            out.push(']');
        }
        _ => quote(&v.to_string(), out),
    }
}

impl Printer<'_> {
    fn body(&mut self, stmts: &[ast::Stmt<'_>]) -> Printed {
        for s in stmts {
            self.stmt(s)?;
        }
        Ok(())
    }

    fn stmt(&mut self, s: &ast::Stmt<'_>) -> Printed {
        match s {
            ast::Stmt::Template(t) => self.body(&t.children),
            ast::Stmt::EmitRaw(raw) => {
                if raw.raw.contains("{{") || raw.raw.contains("{%") || raw.raw.contains("{#") {
                    self.out.push_str("{{ ");
                    quote(raw.raw, &mut self.out);
                    self.out.push_str(" }}");
                } else {
                    self.out.push_str(raw.raw);
                }
                Ok(())
            }
            ast::Stmt::EmitExpr(e) => {
                self.out.push_str("{{ ");
                self.expr(&e.expr)?;
                self.out.push_str(" }}");
                Ok(())
            }
            ast::Stmt::ForLoop(f) => {
                if f.recursive {
                    return Err(refuse(f.span(), "a recursive loop (Nunjucks has none)"));
                }
                if f.filter_expr.is_some() {
                    return Err(refuse(
                        f.span(),
                        "a loop with an `if` filter (Nunjucks has none)",
                    ));
                }
                self.out.push_str("{% for ");
                let pairs = match &f.target {
                    ast::Expr::Var(v) => {
                        self.out.push_str(v.id);
                        false
                    }
                    ast::Expr::List(l)
                        if l.items.iter().all(|i| matches!(i, ast::Expr::Var(_))) =>
                    {
                        let names: Vec<&str> = l
                            .items
                            .iter()
                            .filter_map(|i| match i {
                                ast::Expr::Var(v) => Some(v.id),
                                _ => None,
                            })
                            .collect();
                        self.out.push_str(&names.join(", "));
                        true
                    }
                    other => {
                        return Err(refuse(
                            expr_span(other),
                            "a loop target that is not a name or names",
                        ));
                    }
                };
                self.out.push_str(if pairs {
                    " in __nj_pairs("
                } else {
                    " in __nj_iter("
                });
                self.expr(&f.iter)?;
                self.out.push_str(") %}");
                self.loop_depth += 1;
                self.body(&f.body)?;
                self.loop_depth -= 1;
                if !f.else_body.is_empty() {
                    self.out.push_str("{% else %}");
                    self.body(&f.else_body)?;
                }
                self.out.push_str("{% endfor %}");
                Ok(())
            }
            ast::Stmt::IfCond(c) => {
                self.out.push_str("{% if __nj_truthy(");
                self.expr(&c.expr)?;
                self.out.push_str(") %}");
                self.body(&c.true_body)?;
                if !c.false_body.is_empty() {
                    self.out.push_str("{% else %}");
                    self.body(&c.false_body)?;
                }
                self.out.push_str("{% endif %}");
                Ok(())
            }
            ast::Stmt::Set(set) => {
                let name = self.set_target(&set.target, set.span())?;
                self.out.push_str("{% set ");
                self.out.push_str(&name);
                self.out.push_str(" = ");
                self.expr(&set.expr)?;
                self.out.push_str(" %}");
                Ok(())
            }
            ast::Stmt::SetBlock(set) => {
                if set.filter.is_some() {
                    return Err(refuse(
                        set.span(),
                        "a filtered `{% set %}` block (Nunjucks has none)",
                    ));
                }
                let name = self.set_target(&set.target, set.span())?;
                self.out.push_str("{% set ");
                self.out.push_str(&name);
                self.out.push_str(" %}");
                self.body(&set.body)?;
                self.out.push_str("{% endset %}");
                Ok(())
            }
            ast::Stmt::FilterBlock(fb) => {
                self.out.push_str("{% filter ");
                self.filter_chain(&fb.filter)?;
                self.out.push_str(" %}");
                self.body(&fb.body)?;
                self.out.push_str("{% endfilter %}");
                Ok(())
            }
            ast::Stmt::Macro(m) => {
                self.out.push_str("{% macro ");
                self.out.push_str(m.name);
                self.macro_args(&m.args, &m.defaults)?;
                self.out.push_str(" %}");
                self.macro_depth += 1;
                self.body(&m.body)?;
                self.macro_depth -= 1;
                self.out.push_str("{% endmacro %}");
                Ok(())
            }
            ast::Stmt::WithBlock(w) => Err(refuse(w.span(), "`{% with %}` (Nunjucks has none)")),
            ast::Stmt::AutoEscape(a) => {
                Err(refuse(a.span(), "`{% autoescape %}` (Nunjucks has none)"))
            }
            ast::Stmt::Do(d) => Err(refuse(d.span(), "`{% do %}` (Nunjucks has none)")),
            ast::Stmt::CallBlock(c) => Err(refuse(
                c.span(),
                "`{% call %}` blocks (not supported by evalhost's Nunjucks)",
            )),
            ast::Stmt::Block(b) => Err(refuse(
                b.span(),
                "`{% block %}`: a prompt has no parent template",
            )),
            ast::Stmt::Extends(e) => Err(refuse(
                e.span(),
                "`{% extends %}`: a prompt has no parent template",
            )),
            ast::Stmt::Include(i) => Err(refuse(
                i.span(),
                "`{% include %}`: a prompt's template loads no other file",
            )),
            ast::Stmt::Import(i) => Err(refuse(
                i.span(),
                "`{% import %}`: a prompt's template loads no other file",
            )),
            ast::Stmt::FromImport(i) => Err(refuse(
                i.span(),
                "`{% from … import %}`: a prompt's template loads no other file",
            )),
            #[allow(unreachable_patterns)]
            _ => Err(Refusal {
                line: 1,
                message: "a statement Nunjucks has not".into(),
            }),
        }
    }

    /// A `{% set %}` target: one name. Inside a loop, a name an earlier
    /// `{% set %}` outside every loop assigned is refused: Nunjucks changes
    /// the outer variable there, minijinja a copy in the loop.
    fn set_target(
        &mut self,
        target: &ast::Expr<'_>,
        span: minijinja::machinery::Span,
    ) -> Result<String, Refusal> {
        let v = match target {
            ast::Expr::Var(v) => v,
            ast::Expr::List(_) => {
                return Err(refuse(
                    span,
                    "`{% set a, b = … %}` (Nunjucks sets every name to the whole value)",
                ));
            }
            _ => {
                return Err(refuse(
                    span,
                    "`{% set x.y = … %}` (Nunjucks sets names only; minijinja's `namespace` is not Nunjucks')",
                ));
            }
        };
        if self.loop_depth > 0 && self.top_sets.contains(v.id) {
            return Err(refuse(
                span,
                format!(
                    "`{{% set {} %}}` inside a loop changes `{}` outside the loop in Nunjucks; evalhost cannot do that",
                    v.id, v.id
                ),
            ));
        }
        if self.loop_depth == 0 && self.macro_depth == 0 {
            self.top_sets.insert(v.id.to_owned());
        }
        Ok(v.id.to_owned())
    }

    fn macro_args(&mut self, args: &[ast::Expr<'_>], defaults: &[ast::Expr<'_>]) -> Printed {
        self.out.push('(');
        let first_default = args.len().saturating_sub(defaults.len());
        for (i, arg) in args.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            let ast::Expr::Var(v) = arg else {
                return Err(refuse(
                    expr_span(arg),
                    "a macro argument that is not a name",
                ));
            };
            self.out.push_str(v.id);
            if i >= first_default {
                self.out.push('=');
                self.expr(&defaults[i - first_default])?;
            }
        }
        self.out.push(')');
        Ok(())
    }

    fn call_args(
        &mut self,
        args: &[ast::CallArg<'_>],
        span: minijinja::machinery::Span,
    ) -> Printed {
        for (i, arg) in args.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            match arg {
                ast::CallArg::Pos(e) => self.expr(e)?,
                ast::CallArg::Kwarg(name, e) => {
                    self.out.push_str(name);
                    self.out.push('=');
                    self.expr(e)?;
                }
                ast::CallArg::PosSplat(_) | ast::CallArg::KwargSplat(_) => {
                    return Err(refuse(span, "`*args` and `**kwargs` (Nunjucks has none)"));
                }
            }
        }
        Ok(())
    }

    /// A filter (in a filter block: one without an operand).
    fn filter_chain(&mut self, e: &ast::Expr<'_>) -> Printed {
        match e {
            ast::Expr::Filter(f) => {
                if let Some(inner) = &f.expr {
                    self.filter_chain(inner)?;
                    self.out.push('|');
                }
                self.out.push_str(f.name);
                if !f.args.is_empty() {
                    self.out.push('(');
                    self.call_args(&f.args, f.span())?;
                    self.out.push(')');
                }
                Ok(())
            }
            other => self.expr(other),
        }
    }

    /// Whether the operator of a comparison whose operands are `left` and
    /// `right` was written `===` or `!==`.
    fn is_strict(&self, left: &ast::Expr<'_>, right: &ast::Expr<'_>) -> bool {
        let from = expr_span(left).end_offset as usize;
        let to = expr_span(right).start_offset as usize;
        self.strict
            .iter()
            .any(|&at| at >= from && at < to.max(from + 1))
    }

    fn expr(&mut self, e: &ast::Expr<'_>) -> Printed {
        match e {
            ast::Expr::Var(v) => {
                self.out.push_str(match v.id {
                    "null" => "none",
                    id => id,
                });
                Ok(())
            }
            ast::Expr::Const(c) => {
                literal(&c.value, &mut self.out);
                Ok(())
            }
            ast::Expr::Slice(s) => Err(refuse(s.span(), "a slice `x[a:b]` (Nunjucks has none)")),
            ast::Expr::UnaryOp(u) => {
                match u.op {
                    ast::UnaryOpKind::Not => {
                        self.out.push_str("(not __nj_truthy(");
                        self.expr(&u.expr)?;
                        self.out.push_str("))");
                    }
                    ast::UnaryOpKind::Neg => {
                        self.out.push_str("__nj_op(\"-\", 0, ");
                        self.expr(&u.expr)?;
                        self.out.push(')');
                    }
                }
                Ok(())
            }
            ast::Expr::BinOp(b) => {
                use ast::BinOpKind as K;
                let op = match b.op {
                    K::ScAnd | K::ScOr => {
                        // JavaScript's && and ||: one operand, by truthiness.
                        let and = matches!(b.op, K::ScAnd);
                        self.out.push('(');
                        if and {
                            self.expr(&b.right)?;
                        } else {
                            self.expr(&b.left)?;
                        }
                        self.out.push_str(" if __nj_truthy(");
                        self.expr(&b.left)?;
                        self.out.push_str(") else ");
                        if and {
                            self.expr(&b.left)?;
                        } else {
                            self.expr(&b.right)?;
                        }
                        self.out.push(')');
                        return Ok(());
                    }
                    K::In => {
                        self.out.push_str("__nj_in(");
                        self.expr(&b.left)?;
                        self.out.push_str(", ");
                        self.expr(&b.right)?;
                        self.out.push(')');
                        return Ok(());
                    }
                    K::Eq if self.is_strict(&b.left, &b.right) => "===",
                    K::Ne if self.is_strict(&b.left, &b.right) => "!==",
                    K::Eq => "==",
                    K::Ne => "!=",
                    K::Lt => "<",
                    K::Lte => "<=",
                    K::Gt => ">",
                    K::Gte => ">=",
                    K::Add => "+",
                    K::Sub => "-",
                    K::Mul => "*",
                    K::Div => "/",
                    K::FloorDiv => "//",
                    K::Rem => "%",
                    K::Pow => "**",
                    K::Concat => "~",
                };
                self.out.push_str("__nj_op(\"");
                self.out.push_str(op);
                self.out.push_str("\", ");
                self.expr(&b.left)?;
                self.out.push_str(", ");
                self.expr(&b.right)?;
                self.out.push(')');
                Ok(())
            }
            ast::Expr::Compare(c) => Err(refuse(
                c.span(),
                "a chained comparison `a < b < c` (Nunjucks compares the first result with c)",
            )),
            ast::Expr::IfExpr(i) => {
                self.out.push('(');
                self.expr(&i.true_expr)?;
                self.out.push_str(" if __nj_truthy(");
                self.expr(&i.test_expr)?;
                self.out.push(')');
                if let Some(f) = &i.false_expr {
                    self.out.push_str(" else ");
                    self.expr(f)?;
                }
                self.out.push(')');
                Ok(())
            }
            ast::Expr::Filter(_) => {
                self.out.push('(');
                self.filter_chain(e)?;
                self.out.push(')');
                Ok(())
            }
            ast::Expr::Test(t) => {
                self.out.push('(');
                self.expr(&t.expr)?;
                self.out.push_str(" is ");
                self.out.push_str(t.name);
                if !t.args.is_empty() {
                    self.out.push('(');
                    self.call_args(&t.args, t.span())?;
                    self.out.push(')');
                }
                self.out.push(')');
                Ok(())
            }
            ast::Expr::GetAttr(g) => {
                self.out.push_str("__nj_item(");
                self.expr(&g.expr)?;
                self.out.push_str(", ");
                quote(g.name, &mut self.out);
                self.out.push(')');
                Ok(())
            }
            ast::Expr::GetItem(g) => {
                self.out.push_str("__nj_item(");
                self.expr(&g.expr)?;
                self.out.push_str(", ");
                self.expr(&g.subscript_expr)?;
                self.out.push(')');
                Ok(())
            }
            ast::Expr::Call(c) => {
                match &c.expr {
                    // A method: minijinja's own (a macro's), else the
                    // JavaScript method of a string or an array.
                    ast::Expr::GetAttr(g) => {
                        self.out.push('(');
                        self.expr(&g.expr)?;
                        self.out.push_str(").");
                        self.out.push_str(g.name);
                    }
                    other => self.expr(other)?,
                }
                self.out.push('(');
                self.call_args(&c.args, c.span())?;
                self.out.push(')');
                Ok(())
            }
            ast::Expr::List(l) => {
                self.out.push('[');
                for (i, item) in l.items.iter().enumerate() {
                    if i > 0 {
                        self.out.push_str(", ");
                    }
                    self.expr(item)?;
                }
                self.out.push(']');
                Ok(())
            }
            ast::Expr::Map(m) => {
                self.out.push('{');
                for (i, (k, v)) in m.keys.iter().zip(&m.values).enumerate() {
                    if i > 0 {
                        self.out.push_str(", ");
                    }
                    match k {
                        // Nunjucks reads `{ a: 1 }`'s key as the name `a`.
                        ast::Expr::Var(name) => quote(name.id, &mut self.out),
                        other => {
                            self.out.push_str("__nj_key(");
                            self.expr(other)?;
                            self.out.push(')');
                        }
                    }
                    self.out.push_str(": ");
                    self.expr(v)?;
                }
                self.out.push('}');
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operators_become_calls_with_javascripts_meaning() {
        assert_eq!(
            translate("{% if n == '10' %}x{% endif %}").unwrap(),
            "{% if __nj_truthy(__nj_op(\"==\", n, \"10\")) %}x{% endif %}"
        );
        assert_eq!(
            translate("{{ a === 1 }}").unwrap(),
            "{{ __nj_op(\"===\", a, 1) }}"
        );
        assert_eq!(
            translate("{{ a.b[0] }}").unwrap(),
            "{{ __nj_item(__nj_item(a, \"b\"), 0) }}"
        );
        assert_eq!(translate("{{ s.upper() }}").unwrap(), "{{ (s).upper() }}");
    }

    #[test]
    fn raw_text_that_looks_like_a_tag_stays_text() {
        let printed = translate("{% raw %}{{ x }}{% endraw %} {{ y }}").unwrap();
        assert_eq!(printed, "{{ \"{{ x }}\" }} {{ y }}");
    }

    #[test]
    fn what_nunjucks_lacks_is_refused_at_its_line() {
        let err = translate("a\n{% with x = 1 %}{% endwith %}").unwrap_err();
        assert!(
            matches!(err, TranslateError::Refused(Refusal { line: 2, .. })),
            "{err:?}"
        );
        let err = translate("{% set t = 0 %}{% for i in xs %}{% set t = t + i %}{% endfor %}")
            .unwrap_err();
        assert!(err.to_string().contains("outside the loop"), "{err}");
    }
}
