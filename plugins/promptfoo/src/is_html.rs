//! promptfoo's `validateHtml` (`src/assertions/html.ts`,
//! `pf:evaluator-8V_ULngs.js:1860-2070`): the trimmed output is parsed as a
//! whole document by a WHATWG tree builder (promptfoo's parse5, html5ever
//! here: the same algorithm), then it must hold an element promptfoo
//! recognizes, and no text directly in an implied `<body>`.
//!
//! parse5 gives an element a source location only when a start tag made
//! it: an `<html>`, `<head>` or `<body>` the tree builder implied has none,
//! and promptfoo counts such a wrapper only when the input spells it. The
//! tree builder here is fed through [`Spy`], which notes the start tag
//! being processed, so that the sink knows which elements a tag made.

use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};

use evalhost_plugin_sdk::Grade;
use html5ever::tendril::StrTendril;
use html5ever::tokenizer::{
    BufferQueue, TagKind, Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts,
};
use html5ever::tree_builder::{
    ElementFlags, NodeOrText, QuirksMode, TreeBuilder, TreeBuilderOpts, TreeSink,
};
use html5ever::{Attribute, LocalName, QualName, TokenizerResult};

use crate::{js, judged};

/// promptfoo's `MAX_INPUT_SIZE`: 10 MiB of UTF-16 code units.
const MAX_INPUT_SIZE: usize = 10 * 1024 * 1024;

/// promptfoo's `VALID_HTML_ELEMENTS`.
const VALID_HTML_ELEMENTS: &[&str] = &[
    "html",
    "head",
    "title",
    "base",
    "link",
    "meta",
    "style",
    "body",
    "article",
    "section",
    "nav",
    "aside",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "footer",
    "address",
    "p",
    "hr",
    "pre",
    "blockquote",
    "ol",
    "ul",
    "li",
    "dl",
    "dt",
    "dd",
    "figure",
    "figcaption",
    "main",
    "div",
    "a",
    "em",
    "strong",
    "small",
    "s",
    "cite",
    "q",
    "dfn",
    "abbr",
    "ruby",
    "rt",
    "rp",
    "data",
    "time",
    "code",
    "var",
    "samp",
    "kbd",
    "sub",
    "sup",
    "i",
    "b",
    "u",
    "mark",
    "bdi",
    "bdo",
    "span",
    "br",
    "wbr",
    "img",
    "iframe",
    "embed",
    "object",
    "param",
    "picture",
    "source",
    "video",
    "audio",
    "track",
    "map",
    "area",
    "svg",
    "math",
    "script",
    "noscript",
    "canvas",
    "ins",
    "del",
    "table",
    "caption",
    "colgroup",
    "col",
    "tbody",
    "thead",
    "tfoot",
    "tr",
    "td",
    "th",
    "form",
    "label",
    "input",
    "button",
    "select",
    "datalist",
    "optgroup",
    "option",
    "textarea",
    "output",
    "progress",
    "meter",
    "fieldset",
    "legend",
    "details",
    "summary",
    "dialog",
    "menu",
    "slot",
    "template",
];

/// `validateHtml(output)`: `Ok` when promptfoo's is valid, else its reason.
pub fn validate_html(output: &str) -> Result<(), &'static str> {
    let trimmed = js::trim(output);
    if trimmed.is_empty() {
        return Err("Output is empty");
    }
    if trimmed.len() > MAX_INPUT_SIZE && js::utf16_len(trimmed) > MAX_INPUT_SIZE {
        return Err("Output exceeds maximum size limit");
    }
    // `/^\s*<\?xml/i` on the trimmed text (a non-Unicode `/i`: ASCII only).
    if trimmed
        .as_bytes()
        .get(..5)
        .is_some_and(|b| b.eq_ignore_ascii_case(b"<?xml"))
    {
        return Err("Output appears to be XML, not HTML");
    }
    let document = parse(trimmed);
    // `trimmed.toLowerCase()`: Unicode's default lowercasing, as Rust's.
    let lower = trimmed.to_lowercase();
    let body = first_element(&document, |name, _| name == "body");
    if let Some(body) = &body {
        let literal = wrapper_spelled(&lower, "body") && body.is_from_token();
        if !literal && body.has_top_level_text() {
            return Err("Output must be wrapped in HTML tags");
        }
    }
    let recognized = first_element(&document, |name, from_token| {
        let name = name.to_lowercase();
        if matches!(name.as_str(), "html" | "head" | "body") {
            wrapper_spelled(&lower, &name) && from_token
        } else {
            VALID_HTML_ELEMENTS.contains(&name.as_str()) || name.contains('-')
        }
    });
    if recognized.is_none() {
        return Err("Output does not contain recognized HTML elements");
    }
    Ok(())
}

/// promptfoo's `LITERAL_WRAPPER_PATTERNS[tag]`, `/<tag(?=[\s>/])/`, on the
/// lowercased input.
fn wrapper_spelled(lower: &str, tag: &str) -> bool {
    let open = format!("<{tag}");
    lower.match_indices(&open).any(|(at, _)| {
        lower[at + open.len()..]
            .chars()
            .next()
            .is_some_and(|c| c == '>' || c == '/' || js::is_js_space(c))
    })
}

/// `findFirstElement(root, predicate)`: depth first in document order,
/// through child nodes only (a `<template>`'s content is not a child).
fn first_element(root: &Handle, predicate: impl Fn(&str, bool) -> bool) -> Option<Handle> {
    let mut stack = vec![root.clone()];
    while let Some(node) = stack.pop() {
        if let Kind::Element {
            name, from_token, ..
        } = &node.kind
            && predicate(&name.local, *from_token)
        {
            return Some(node);
        }
        stack.extend(node.children.borrow().iter().rev().cloned());
    }
    None
}

/// Parses `text` as a whole HTML document (parse5's `parse`, scripting on).
fn parse(text: &str) -> Handle {
    let start_tag = Rc::new(RefCell::new(None));
    let sink = Sink {
        document: Node::new(Kind::Document),
        start_tag: Rc::clone(&start_tag),
    };
    let document = Rc::clone(&sink.document);
    let builder = TreeBuilder::new(
        sink,
        TreeBuilderOpts {
            scripting_enabled: true,
            ..TreeBuilderOpts::default()
        },
    );
    let tokenizer = Tokenizer::new(Spy { builder, start_tag }, TokenizerOpts::default());
    let input = BufferQueue::default();
    input.push_back(StrTendril::from_slice(text));
    while let TokenizerResult::Script(_) = tokenizer.feed(&input) {}
    tokenizer.end();
    document
}

/// The tree builder's token sink, noting the start tag it is given.
struct Spy {
    builder: TreeBuilder<Handle, Sink>,
    start_tag: Rc<RefCell<Option<LocalName>>>,
}

impl TokenSink for Spy {
    type Handle = Handle;

    fn process_token(&self, token: Token, line_number: u64) -> TokenSinkResult<Handle> {
        *self.start_tag.borrow_mut() = match &token {
            Token::TagToken(tag) if tag.kind == TagKind::StartTag => Some(tag.name.clone()),
            _ => None,
        };
        let result = self.builder.process_token(token, line_number);
        *self.start_tag.borrow_mut() = None;
        result
    }

    fn end(&self) {
        self.builder.end();
    }

    fn adjusted_current_node_present_but_not_in_html_namespace(&self) -> bool {
        self.builder
            .adjusted_current_node_present_but_not_in_html_namespace()
    }
}

type Handle = Rc<Node>;

struct Node {
    kind: Kind,
    parent: Cell<Option<Weak<Node>>>,
    children: RefCell<Vec<Handle>>,
}

enum Kind {
    Document,
    Element {
        name: QualName,
        /// A start tag made it (parse5 gives it a source location).
        from_token: bool,
        template_contents: Option<Handle>,
        mathml_annotation_xml_integration_point: bool,
    },
    Text(RefCell<String>),
    /// A comment, doctype or processing instruction.
    Other,
}

impl Node {
    fn new(kind: Kind) -> Handle {
        Rc::new(Node {
            kind,
            parent: Cell::new(None),
            children: RefCell::new(Vec::new()),
        })
    }

    fn is_from_token(&self) -> bool {
        matches!(
            self.kind,
            Kind::Element {
                from_token: true,
                ..
            }
        )
    }

    /// `hasTopLevelText(node)`: a child text node that is not blank.
    fn has_top_level_text(&self) -> bool {
        self.children
            .borrow()
            .iter()
            .any(|c| matches!(&c.kind, Kind::Text(t) if !js::trim(&t.borrow()).is_empty()))
    }

    fn parent(&self) -> Option<Handle> {
        let weak = self.parent.take();
        let parent = weak.as_ref().and_then(Weak::upgrade);
        self.parent.set(weak);
        parent
    }
}

impl Drop for Node {
    /// Without recursion: a deeply nested document must not overflow the
    /// stack when it is dropped.
    fn drop(&mut self) {
        let mut nodes = std::mem::take(self.children.get_mut());
        if let Kind::Element {
            template_contents: Some(t),
            ..
        } = &mut self.kind
        {
            nodes.push(Rc::clone(t));
        }
        while let Some(node) = nodes.pop() {
            nodes.extend(std::mem::take(&mut *node.children.borrow_mut()));
            if let Kind::Element {
                template_contents: Some(t),
                ..
            } = &node.kind
            {
                nodes.extend(std::mem::take(&mut *t.children.borrow_mut()));
            }
        }
    }
}

struct Sink {
    document: Handle,
    start_tag: Rc<RefCell<Option<LocalName>>>,
}

impl Sink {
    fn detach(target: &Handle) {
        if let Some(parent) = target.parent() {
            parent
                .children
                .borrow_mut()
                .retain(|c| !Rc::ptr_eq(c, target));
        }
        target.parent.set(None);
    }

    /// Inserts `child` into `parent` at `at` (the end when `None`), text
    /// joining a text node just before it.
    fn insert(parent: &Handle, at: Option<usize>, child: NodeOrText<Handle>) {
        let index = at.unwrap_or_else(|| parent.children.borrow().len());
        let node = match child {
            NodeOrText::AppendText(text) => {
                if index > 0
                    && let Kind::Text(t) = &parent.children.borrow()[index - 1].kind
                {
                    t.borrow_mut().push_str(&text);
                    return;
                }
                Node::new(Kind::Text(RefCell::new(text.to_string())))
            }
            NodeOrText::AppendNode(node) => {
                Self::detach(&node);
                node
            }
        };
        node.parent.set(Some(Rc::downgrade(parent)));
        let index = index.min(parent.children.borrow().len());
        parent.children.borrow_mut().insert(index, node);
    }
}

impl TreeSink for Sink {
    type Handle = Handle;
    type Output = Handle;
    type ElemName<'a> = &'a QualName;

    fn finish(self) -> Handle {
        self.document
    }

    fn parse_error(&self, _msg: Cow<'static, str>) {}

    fn get_document(&self) -> Handle {
        Rc::clone(&self.document)
    }

    fn elem_name<'a>(&'a self, target: &'a Handle) -> &'a QualName {
        match &target.kind {
            Kind::Element { name, .. } => name,
            _ => unreachable!("the tree builder names elements only"),
        }
    }

    fn create_element(
        &self,
        name: QualName,
        _attrs: Vec<Attribute>,
        flags: ElementFlags,
    ) -> Handle {
        let from_token = self.start_tag.borrow().as_ref() == Some(&name.local);
        Node::new(Kind::Element {
            name,
            from_token,
            template_contents: flags.template.then(|| Node::new(Kind::Document)),
            mathml_annotation_xml_integration_point: flags.mathml_annotation_xml_integration_point,
        })
    }

    fn create_comment(&self, _text: StrTendril) -> Handle {
        Node::new(Kind::Other)
    }

    fn create_pi(&self, _target: StrTendril, _data: StrTendril) -> Handle {
        Node::new(Kind::Other)
    }

    fn append(&self, parent: &Handle, child: NodeOrText<Handle>) {
        Self::insert(parent, None, child);
    }

    fn append_based_on_parent_node(
        &self,
        element: &Handle,
        prev_element: &Handle,
        child: NodeOrText<Handle>,
    ) {
        if element.parent().is_some() {
            self.append_before_sibling(element, child);
        } else {
            self.append(prev_element, child);
        }
    }

    fn append_doctype_to_document(&self, _: StrTendril, _: StrTendril, _: StrTendril) {
        Self::insert(
            &self.document,
            None,
            NodeOrText::AppendNode(Node::new(Kind::Other)),
        );
    }

    fn get_template_contents(&self, target: &Handle) -> Handle {
        match &target.kind {
            Kind::Element {
                template_contents: Some(t),
                ..
            } => Rc::clone(t),
            _ => unreachable!("only a template has contents"),
        }
    }

    fn same_node(&self, x: &Handle, y: &Handle) -> bool {
        Rc::ptr_eq(x, y)
    }

    fn set_quirks_mode(&self, _mode: QuirksMode) {}

    fn append_before_sibling(&self, sibling: &Handle, child: NodeOrText<Handle>) {
        let Some(parent) = sibling.parent() else {
            return;
        };
        // Detach first: the index must be the sibling's after it.
        if let NodeOrText::AppendNode(node) = &child {
            Self::detach(node);
        }
        let index = parent
            .children
            .borrow()
            .iter()
            .position(|c| Rc::ptr_eq(c, sibling));
        Self::insert(&parent, index, child);
    }

    fn add_attrs_if_missing(&self, _target: &Handle, _attrs: Vec<Attribute>) {}

    fn remove_from_parent(&self, target: &Handle) {
        Self::detach(target);
    }

    fn reparent_children(&self, node: &Handle, new_parent: &Handle) {
        let children = std::mem::take(&mut *node.children.borrow_mut());
        for child in &children {
            child.parent.set(Some(Rc::downgrade(new_parent)));
        }
        new_parent.children.borrow_mut().extend(children);
    }

    fn is_mathml_annotation_xml_integration_point(&self, handle: &Handle) -> bool {
        matches!(
            handle.kind,
            Kind::Element {
                mathml_annotation_xml_integration_point: true,
                ..
            }
        )
    }
}

/// promptfoo's `is-html`.
pub(crate) fn grade(output: &str, inverse: bool) -> Grade {
    let result = validate_html(output);
    let pass = result.is_ok() != inverse;
    judged(
        pass,
        if pass { 1.0 } else { 0.0 },
        if pass {
            "Assertion passed".into()
        } else {
            result.err().unwrap_or("Output is valid HTML").into()
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_are_judged_as_promptfoo_judges_them() {
        assert_eq!(validate_html("<div>hi</div>"), Ok(()));
        assert_eq!(validate_html("  \n"), Err("Output is empty"));
        assert_eq!(
            validate_html("<?XML version='1.0'?><a/>"),
            Err("Output appears to be XML, not HTML")
        );
        assert_eq!(
            validate_html("Hello <b>world</b>"),
            Err("Output must be wrapped in HTML tags")
        );
        assert_eq!(validate_html("<body>Hello <b>world</b></body>"), Ok(()));
        assert_eq!(
            validate_html("<foo>bar</foo>"),
            Err("Output does not contain recognized HTML elements")
        );
        assert_eq!(validate_html("<x-card>hi</x-card>"), Ok(()));
        // An implied wrapper is not the author's.
        assert_eq!(validate_html("<title>x</title>"), Ok(()));
        assert_eq!(validate_html("<html></html>"), Ok(()));
        assert_eq!(
            validate_html("<foo></foo><!-- <html> -->"),
            Err("Output does not contain recognized HTML elements")
        );
    }

    #[test]
    fn deep_nesting_is_no_problem() {
        let deep = format!("{}x{}", "<div>".repeat(5_000), "</div>".repeat(5_000));
        assert_eq!(validate_html(&deep), Ok(()));
    }
}
