//! Flow nesting measured in one linear pass, before the parser runs.
//!
//! saphyr's scanner reads a flow collection that may be a key (`[a]: b`)
//! to its end before it hands out its first token, and every token it reads
//! on the way costs it the current flow depth (it walks one possible key per
//! open bracket). `[[[[…]]]]` therefore costs the square of its size before
//! the builder sees the first `[` and its depth limit fires: a 400 KB file
//! took minutes. This pass follows the scanner's token rules (comments,
//! quoted, plain and block scalars, block indentation) far enough to tell
//! which `[` and `{` open a flow collection, and stops at the first one past
//! [`MAX_DEPTH`]: the parser is then never given more than that many open
//! brackets, and its look-ahead costs at most that much per token.
//!
//! It only ever stops a document the parser refuses too (a flow collection
//! past the limit is past the builder's limit). Where the scanner would
//! report a syntax error, this pass stops looking and leaves the document
//! to the parser, which then stops there.

use super::MAX_DEPTH;

/// Where flow nesting first passes the limit: the line (from 1) and the
/// column (from 0, in characters) of the bracket, as the parser counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct TooDeep {
    pub line: usize,
    pub col: usize,
    /// The byte after the bracket.
    pub end: usize,
}

/// The first `[` or `{` that opens a flow collection deeper than
/// [`MAX_DEPTH`], if any. Linear in the length of `text`.
pub(super) fn too_deep(text: &str) -> Option<TooDeep> {
    let mut lexer = Lexer {
        b: text.as_bytes(),
        i: 0,
        line: 1,
        col: 0,
        indent: -1,
        indents: Vec::new(),
        depth: 0,
        key_allowed: true,
        key: None,
    };
    match lexer.run() {
        Ok(()) | Err(Stop::Unreadable) => None,
        Err(Stop::TooDeep(at)) => Some(at),
    }
}

enum Stop {
    /// A bracket past the limit.
    TooDeep(TooDeep),
    /// Something the scanner refuses: it stops there, and so does this pass.
    Unreadable,
}

/// A block-level simple key: where it starts (line, column, byte).
#[derive(Clone, Copy)]
struct Key {
    line: usize,
    col: usize,
    index: usize,
}

struct Lexer<'a> {
    b: &'a [u8],
    i: usize,
    line: usize,
    col: usize,
    /// The block indentation, as the scanner keeps it (-1 at the top).
    indent: isize,
    /// The indentations below, and whether each opened a block.
    indents: Vec<(isize, bool)>,
    /// Open flow collections.
    depth: usize,
    key_allowed: bool,
    key: Option<Key>,
}

/// U+FEFF in UTF-8.
const BOM: &[u8] = "\u{FEFF}".as_bytes();

fn is_blank(c: u8) -> bool {
    c == b' ' || c == b'\t'
}

fn is_break(c: u8) -> bool {
    c == b'\n' || c == b'\r'
}

/// A blank, a line break or the end of the text (read as 0).
fn is_blank_or_breakz(c: u8) -> bool {
    is_blank(c) || is_break(c) || c == 0
}

fn is_flow(c: u8) -> bool {
    matches!(c, b',' | b'[' | b']' | b'{' | b'}')
}

impl Lexer<'_> {
    fn peek(&self, n: usize) -> u8 {
        self.b.get(self.i + n).copied().unwrap_or(0)
    }

    fn eof(&self) -> bool {
        self.i >= self.b.len()
    }

    /// Moves past one character (a line break counts `\r\n` as one).
    fn bump(&mut self) {
        match self.peek(0) {
            b'\r' if self.peek(1) == b'\n' => {
                self.i += 2;
                self.line += 1;
                self.col = 0;
            }
            b'\n' | b'\r' => {
                self.i += 1;
                self.line += 1;
                self.col = 0;
            }
            _ => {
                self.i += 1;
                // The rest of a UTF-8 sequence is the same character.
                while self.i < self.b.len() && self.b[self.i] & 0xC0 == 0x80 {
                    self.i += 1;
                }
                self.col += 1;
            }
        }
    }

    fn skip_to_eol(&mut self) {
        while !self.eof() && !is_break(self.peek(0)) {
            self.bump();
        }
    }

    fn is_document_indicator(&self) -> bool {
        self.col == 0
            && (self.b[self.i..].starts_with(b"---") || self.b[self.i..].starts_with(b"..."))
            && is_blank_or_breakz(self.peek(3))
    }

    fn in_block(&self) -> bool {
        self.depth == 0
    }

    fn roll_indent(&mut self, col: usize) {
        if !self.in_block() {
            return;
        }
        let col = col as isize;
        if self.indent <= col
            && let Some(&(previous, false)) = self.indents.last()
        {
            self.indent = previous;
            self.indents.pop();
        }
        if self.indent < col {
            self.indents.push((self.indent, true));
            self.indent = col;
        }
    }

    fn unroll_indent(&mut self, col: isize) {
        if !self.in_block() {
            return;
        }
        while self.indent > col {
            let Some((previous, _)) = self.indents.pop() else {
                break;
            };
            self.indent = previous;
        }
    }

    fn roll_one_col_indent(&mut self) {
        if self.in_block() && self.indents.last().is_some_and(|&(_, block)| block) {
            self.indents.push((self.indent, false));
            self.indent += 1;
        }
    }

    fn unroll_non_block_indents(&mut self) {
        while let Some(&(previous, false)) = self.indents.last() {
            self.indent = previous;
            self.indents.pop();
        }
    }

    fn save_key(&mut self) {
        if self.key_allowed && self.in_block() {
            self.key = Some(Key {
                line: self.line,
                col: self.col,
                index: self.i,
            });
        }
    }

    /// The block-level key waiting for its `:`, if it still may be one.
    fn take_key(&mut self) -> Option<Key> {
        self.key
            .take()
            .filter(|k| k.line == self.line && k.index + 1024 >= self.i)
    }

    fn run(&mut self) -> Result<(), Stop> {
        loop {
            self.skip_to_next_token();
            if self.eof() {
                return Ok(());
            }
            if self.col == 0 {
                if self.peek(0) == b'%' {
                    self.skip_to_eol();
                    continue;
                }
                if self.is_document_indicator() {
                    self.unroll_indent(-1);
                    if self.in_block() {
                        self.key = None;
                    }
                    self.key_allowed = false;
                    for _ in 0..3 {
                        self.bump();
                    }
                    continue;
                }
            }
            // A byte order mark: skipped at the start of a line outside
            // flow collections, an error anywhere else.
            if self.b[self.i..].starts_with(BOM) {
                if self.col != 0 || !self.in_block() {
                    return Err(Stop::Unreadable);
                }
                self.bump();
                continue;
            }
            self.unroll_indent(self.col as isize);
            let (c, next) = (self.peek(0), self.peek(1));
            let before = self.i;
            match c {
                // "found unprintable character"
                0 => return Err(Stop::Unreadable),
                b'[' | b'{' => {
                    self.save_key();
                    self.roll_one_col_indent();
                    self.depth += 1;
                    if self.depth > MAX_DEPTH {
                        return Err(Stop::TooDeep(TooDeep {
                            line: self.line,
                            col: self.col,
                            end: self.i + 1,
                        }));
                    }
                    self.key_allowed = true;
                    self.bump();
                }
                b']' | b'}' => {
                    if self.depth == 0 {
                        // "misplaced bracket"
                        return Err(Stop::Unreadable);
                    }
                    self.depth -= 1;
                    self.key_allowed = false;
                    self.bump();
                }
                b',' => {
                    self.key_allowed = true;
                    self.bump();
                }
                b'-' if is_blank_or_breakz(next) => {
                    if self.in_block() {
                        self.roll_indent(self.col);
                        self.bump();
                        while is_blank(self.peek(0)) {
                            self.bump();
                        }
                        if is_break(self.peek(0)) || is_flow(self.peek(0)) {
                            self.roll_one_col_indent();
                        }
                        self.key = None;
                    } else {
                        self.bump();
                    }
                    self.key_allowed = true;
                }
                b'?' if is_blank_or_breakz(next) => {
                    self.roll_indent(self.col);
                    if self.in_block() {
                        self.key = None;
                    }
                    self.key_allowed = self.in_block();
                    self.bump();
                }
                b':' if is_blank_or_breakz(next) || (!self.in_block() && is_flow(next)) => {
                    if self.in_block() {
                        match self.take_key() {
                            Some(key) => {
                                self.roll_indent(key.col);
                                self.roll_one_col_indent();
                                self.key_allowed = false;
                            }
                            None => {
                                self.roll_indent(self.col);
                                self.roll_one_col_indent();
                                self.key_allowed = true;
                            }
                        }
                    } else {
                        self.key_allowed = false;
                    }
                    self.bump();
                }
                b'*' | b'&' => {
                    self.save_key();
                    self.key_allowed = false;
                    self.bump();
                    while !is_blank_or_breakz(self.peek(0)) && !is_flow(self.peek(0)) {
                        self.bump();
                    }
                }
                b'!' => {
                    self.save_key();
                    self.key_allowed = false;
                    self.tag();
                }
                b'|' | b'>' if self.in_block() => {
                    self.save_key();
                    self.key_allowed = true;
                    self.block_scalar()?;
                }
                b'\'' | b'"' => {
                    self.save_key();
                    self.key_allowed = false;
                    self.quoted(c == b'\'')?;
                }
                b'%' | b'@' | b'`' => return Err(Stop::Unreadable),
                _ => {
                    self.save_key();
                    self.key_allowed = false;
                    self.plain()?;
                }
            }
            // Every token reads at least a character; one that does not is
            // not one the scanner reads either.
            if self.i == before {
                return Err(Stop::Unreadable);
            }
        }
    }

    /// Blanks, line breaks and comments before a token.
    fn skip_to_next_token(&mut self) {
        loop {
            match self.peek(0) {
                b' ' | b'\t' => self.bump(),
                b'\n' | b'\r' => {
                    self.bump();
                    if self.in_block() {
                        self.key_allowed = true;
                    }
                }
                b'#' => self.skip_to_eol(),
                _ => return,
            }
        }
    }

    fn tag(&mut self) {
        self.bump();
        if self.peek(0) == b'<' {
            while !self.eof() && self.peek(0) != b'>' && !is_blank_or_breakz(self.peek(0)) {
                self.bump();
            }
            if self.peek(0) == b'>' {
                self.bump();
            }
            return;
        }
        while !is_blank_or_breakz(self.peek(0)) && !is_flow(self.peek(0)) {
            self.bump();
        }
    }

    fn quoted(&mut self, single: bool) -> Result<(), Stop> {
        self.bump();
        loop {
            if self.eof() || self.is_document_indicator() {
                return Err(Stop::Unreadable);
            }
            match self.peek(0) {
                b'\'' if single => {
                    self.bump();
                    if self.peek(0) != b'\'' {
                        return Ok(());
                    }
                    self.bump();
                }
                b'"' if !single => {
                    self.bump();
                    return Ok(());
                }
                b'\\' if !single => {
                    self.bump();
                    if !self.eof() {
                        self.bump();
                    }
                }
                _ => self.bump(),
            }
        }
    }

    fn can_be_plain(&self) -> bool {
        let (c, next) = (self.peek(0), self.peek(1));
        let in_flow = !self.in_block();
        match c {
            b':' if is_blank_or_breakz(next) || (in_flow && is_flow(next)) => false,
            0xEF if self.b[self.i..].starts_with(BOM) => false,
            c if in_flow && is_flow(c) => false,
            _ => true,
        }
    }

    fn plain(&mut self) -> Result<(), Stop> {
        self.unroll_non_block_indents();
        let indent = self.indent + 1;
        let mut crossed_break = false;
        loop {
            if self.is_document_indicator() || self.peek(0) == b'#' {
                break;
            }
            if !self.in_block() && self.peek(0) == b'-' && is_flow(self.peek(1)) {
                return Err(Stop::Unreadable);
            }
            while !is_blank_or_breakz(self.peek(0)) && self.can_be_plain() {
                self.bump();
            }
            if !(is_blank(self.peek(0)) || is_break(self.peek(0))) {
                break;
            }
            crossed_break = false;
            while is_blank(self.peek(0)) || is_break(self.peek(0)) {
                crossed_break |= is_break(self.peek(0));
                self.bump();
            }
            if self.in_block() && (self.col as isize) < indent {
                break;
            }
        }
        if crossed_break {
            self.key_allowed = true;
        }
        Ok(())
    }

    fn block_scalar(&mut self) -> Result<(), Stop> {
        self.bump();
        self.unroll_non_block_indents();
        let digit = |c: u8| c.is_ascii_digit().then(|| usize::from(c - b'0'));
        let mut increment = None;
        if matches!(self.peek(0), b'+' | b'-') {
            self.bump();
            increment = digit(self.peek(0));
            if increment.is_some() {
                self.bump();
            }
        } else if let Some(d) = digit(self.peek(0)) {
            increment = Some(d);
            self.bump();
            if matches!(self.peek(0), b'+' | b'-') {
                self.bump();
            }
        }
        // "an indentation indicator equal to 0"
        if increment == Some(0) {
            return Err(Stop::Unreadable);
        }
        let increment = increment.unwrap_or(0);
        while is_blank(self.peek(0)) {
            self.bump();
        }
        if self.peek(0) == b'#' {
            self.skip_to_eol();
        }
        if !is_blank_or_breakz(self.peek(0)) {
            return Err(Stop::Unreadable);
        }
        if is_break(self.peek(0)) {
            self.bump();
        }
        let mut indent = if increment > 0 {
            if self.indent >= 0 {
                self.indent as usize + increment
            } else {
                increment
            }
        } else {
            0
        };
        if indent == 0 {
            let mut widest = 0;
            loop {
                while self.peek(0) == b' ' {
                    self.bump();
                }
                widest = widest.max(self.col);
                if is_break(self.peek(0)) {
                    self.bump();
                } else {
                    break;
                }
            }
            indent = widest.max((self.indent + 1) as usize);
            if self.indent > 0 {
                indent = indent.max(1);
            }
        } else {
            self.skip_block_indent(indent);
        }
        if self.eof() {
            return Ok(());
        }
        if self.col < indent && (self.col as isize) > self.indent {
            return Err(Stop::Unreadable);
        }
        while self.col == indent && !self.eof() && !is_break(self.peek(0)) {
            if indent == 0
                && self.b[self.i..].starts_with(b"...")
                && is_blank_or_breakz(self.peek(3))
            {
                break;
            }
            self.skip_to_eol();
            if !is_break(self.peek(0)) {
                break;
            }
            self.bump();
            self.skip_block_indent(indent);
        }
        Ok(())
    }

    /// The indentation of a block scalar's lines, and its empty lines.
    fn skip_block_indent(&mut self, indent: usize) {
        loop {
            while self.col < indent && self.peek(0) == b' ' {
                self.bump();
            }
            if is_break(self.peek(0)) {
                self.bump();
            } else {
                return;
            }
        }
    }
}
