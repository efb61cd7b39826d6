// Records what promptfoo 0.121.20 itself answers for the cases below, into
// oracle.json beside this file; `oracle_cases_match_promptfoo` (oracle.rs)
// grades the same cases and compares pass, score and reason.
//
//     node plugins/promptfoo/src/testdata/oracle.mjs
// (promptfoo installed in target/promptfoo by scripts/conformance-promptfoo.py)
import { writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const modules = path.join(here, "../../../../target/promptfoo/node_modules");
process.env.PROMPTFOO_DISABLE_TELEMETRY = "1";
const pf = await import(path.join(modules, "promptfoo/dist/src/index.js"));
const { runAssertion } = (pf.default ?? pf).assertions;
const rouge = createRequire(import.meta.url)(path.join(modules, "js-rouge"));
// promptfoo's loadYaml (js-yaml with its schema), for string schemas.
const { E: loadYaml } = await import(path.join(modules, "promptfoo/dist/src/logger-DZQrH7Cp.js"));

// A deterministic generator, so the file only changes when the cases do.
let seed = 12345;
const rand = (n) => {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return seed % n;
};
const pick = (xs) => xs[rand(xs.length)];

const cases = [];
const add = (type, output, value, threshold) => cases.push({ type, output, value, threshold });

// is-refusal
const refusals = [
  "", "   ", "\n\t", "\u00a0", "\ufeff", "\u0085", "I'm sorry, I can't do that.", "I’m sorry", "i′m unable to help",
  "Sorry!", "sorryish", "  I apologize for the confusion", "Here is your answer: 42.",
  "As an AI language model, I think so.", "as an aid to memory", "as an aié", "This is not appropriate.",
  "It is not ethical to do that", "That is not legal advice", "notethical", "I can’t assist with that",
  "I cannot helpful", "I want to be direct with you: no.", "The generated text has been blocked by our content filters.",
  "My apologies, that was wrong", "I AM PROGRAMMED to obey", "x_cannot help", "1cannot help", "cannot help_",
  "cannot help-", "ÉI am sorry", "İ am sorry", "I won't write that", "I won’t write that", "I will not.",
  "If you have any other non-malicious requests, ask.", "Sure! Here's how:", "I'd be glad to help.",
];
for (const o of refusals) {
  add("is-refusal", o);
  add("not-is-refusal", o);
}

// contains-html
const htmls = [
  "", "<div>hi</div>", "<p>", "<P class='x'>text", "a < b and c > d", "<foo>", "<foo></foo>", "<foo/>",
  "&amp;", "&amp; &lt;", "Tom &amp; Jerry <x-y z=\"1\">", "<!doctype html>", "<!DOCTYPE  HTML PUBLIC>",
  "<!-- comment -->", "<!-- a - b --> x", "<br/>", "<br>", "<hr >", "<h7>", "<h1 id=a>", "<span", "</span>",
  "<ſpan>", "<linK>", "<LINK>", "use <T> generics", "Vec<String> and Option<T>", "if a<b && c>d",
  " href=\"x\" <a", "<custom-element data-x='1'/>", "&#169; 2024", "&#xA9;", "&nbsp", "x=<y>",
  "<img src=x>", "<script>alert(1)</script>", "<ul><li>a</li></ul>", "<svg/>", "<math>", "<!--x-->&amp;",
  "<τ>text</τ>", "<a1-b>x</a1-b>",
];
for (const o of htmls) {
  add("contains-html", o);
  add("not-contains-html", o);
}

// tool-call-f1
const toolOutputs = [
  "", "no tools", '{"tool_calls":[{"function":{"name":"search"}},{"name":"fetch"}]}',
  '[{"type":"text","text":"hi"},{"type":"tool_use","name":"calc"}]', '{"functionCall":{"name":"weather"}}',
  '{"toolCall":{"functionCalls":[{"name":"a"},{"name":"b"}]}}',
  'Calling.\n  {"type":"tool_use","name":"search"}\n[{"name":"fetch"}]\n{bad json',
  '"{\\"functionCall\\":{\\"name\\":\\"deep\\"}}"', '[{"function":{"name":"search"}},{"function":{"name":"search"}}]',
  '{"tool_calls":"nope","type":"tool_use","name":"x"}', '{"tool_calls":[],"name":"x"}',
  '[{"functionCall":[]},{"function":null,"name":"n"},{"type":"tool_use","name":5,"function":{"name":"f"}}]',
  '{"type":"tool_use","name":"search","x":1e400}', "[1, null, \"a\", [{\"name\":\"z\"}]]",
  '{"functionCall":{"name":"Search"}}', '[{"name":"b"},{"name":"a"},{"name":"B"},{"name":"é"},{"name":"z"}]',
];
const toolValues = [
  ["search"], ["search", "fetch"], "search, fetch", "a,b,c", ["calc"], ["weather", "calc"], " search ,fetch ", ["a", "B", "é"],
];
for (const o of toolOutputs) {
  for (let k = 0; k < 3; k++) {
    const v = pick(toolValues);
    const thr = pick([undefined, undefined, 0.5, 0, 0.8]);
    add(pick(["tool-call-f1", "tool-call-f1", "not-tool-call-f1"]), o, v, thr);
  }
}

// rouge-n
const sentences = [
  "The cat sat on the mat.", "the cat sat on the mat", "A cat sat on a mat!", "The quick brown fox jumps over the lazy dog.",
  "He said \"don't go.\" I cannot, 3,000 U.S. dollars...", "", "   ", "Hello, world!", "hello world",
  "I can't believe it's not butter.", "Gimme 2:30 p.m. at the café — ok?", "«Bonjour», dit-il.", "数字 123 和 ２３",
  "x y z", "the the the the", "Éléphant ÉLÉPHANT éléphant",
];
for (let k = 0; k < 60; k++) {
  const o = pick(sentences);
  const v = pick(sentences);
  add(pick(["rouge-n", "rouge-n", "not-rouge-n"]), o, v, pick([undefined, undefined, 0.5, 0.2, 1]));
}

// is-xml, contains-xml
const xmls = [
  "", "   ", "plain text", "<r/>", "<r>text</r>", "  <r>\n  <a>1</a>\n</r>\n", "<r><a>1</a><a>2</a></r>",
  '<?xml version="1.0" encoding="UTF-8"?>\n<book id="7"><title>T</title><author><name>N</name></author></book>',
  "<r><a></r>", "<r></r><r2/>", "text<r/>", "<r/>text", "<r a=1/>", "<r a='1' a='2'/>", "<r a/>", "<r>&nbsp;</r>",
  "<r>&amp;&lt;&#65;&#x42;</r>", "<r>&#0;</r>", "<r>a]]>b</r>", "<r><!-- a -- b --></r>", "<r><![CDATA[x < y]]></r>",
  "<x:r/>", '<x:r xmlns:x="urn:x"/>', '<r xmlns:x=""/>', '<r xml:lang="en"/>', "<r><constructor/></r>",
  "<toString>x</toString>", "<r>\u0001</r>", "<1r/>", "<r>a < b</r>", "<r>a > b</r>", '<r a="<"/>', '<r a=">"/>',
  "<!DOCTYPE r><r/>", '<!DOCTYPE r SYSTEM "r.dtd"><r>&custom;</r>', '<?xml version="1.0" standalone="yes"?><!DOCTYPE r SYSTEM "r.dtd"><r>&custom;</r>',
  "<!DOCTYPE r [<!ENTITY e 'v'>]><r>&e;</r>", '<!DOCTYPE r PUBLIC "-//X//EN"><r/>', '<!DOCTYPE r PUBLIC "-//X//EN" "r.dtd"><r/>',
  '<!DOCTYPE r SYSTEM "a#b"><r/>', "<!DOCTYPE><r/>", '<?xml version="1.1"?><r/>', ' <?xml version="1.0"?><r/>',
  '<?xml version="1.0"?>', "<?pi data?><r/><!-- c -->", "<r><?pi x?></r>", "\ufeff<r/>", "<r>é😀</r>", "<é/>",
  "<r><a><b><c>deep</c></b></a></r>", "<" + "d>".repeat(101) + "</d>".repeat(101), "<" + "d>".repeat(102) + "</d>".repeat(102),
  "Here is XML: <r><a>1</a></r> done", "First <a>1</a> then <b><c/></b>.", "<a>1</a><b>2</b>", "x <a><b/></a> y <b/>",
  "broken <r><a></r> and <ok><a/></ok>", "<r><a></b></r><z><a/></z>", "<r>1 < 2</r>", "Generics: Vec<String>",
  "<r x='a>b'/>", '<?xml version="1.1"?><r xmlns:x="urn:x"><x:a xmlns:x=""/></r>', '<r xmlns:x="urn:x"><a xmlns:x=""/></r>',
  '<r xmlns=""/>', '<?xml version="1.0" encoding="UTF-8" standalone="no"?><!DOCTYPE r SYSTEM "r.dtd"><r a="&ext;">&ext;</r>', "<a><!DOCTYPE x [<!ENTITY e \"v\">]>&e;</a>", "<a><!Dx></a>", "<r><#text/></r>",
];
const xmlValues = [
  undefined, "r", "r.a", "r.a.0", "r.a.1", "r.a.2", "book.title, book.author.name", "book.@_id", "book.missing",
  ["r", "r.a"], { requiredElements: ["r.a"] }, "r.constructor", "r.__proto__.toString", "?xml", "a, b", "r.#text", "b.c",
  "ok.a", "z.a", "", "d.d.d", "r.x", "r.@_x", "a", "a.#text",
];
for (const o of xmls) {
  for (const t of ["is-xml", "contains-xml"]) {
    add(t, o);
    add(pick([t, "not-" + t]), o, pick(xmlValues));
    add(t, o, pick(xmlValues));
  }
}

// Generated documents: a root around random XML-ish pieces.
const docPieces = [
  "<a>", "</a>", "<b/>", "<c x='1'>", "</c>", "text", " ", "\n", "&amp;", "&lt;", "&#65;", "&#x1F600;", "&bad;", "&#xD800;",
  "<!-- c -->", "<!--x-->", "<![CDATA[ <> ]]>", "<?pi x?>", "<?xml version='1.0'?>", "]]>", "<", ">", "&", "'", "\"",
  "<d:e xmlns:d='urn:d'/>", "<f:g/>", "<h xml:space='preserve'/>", "<i a='1' b=\"2\"/>", "<j a='1' a='1'/>", "<k a=\"<\"/>",
  "\u0007", "\u00a0", "é", "😀", "<é/>", "<1/>", "<-a/>", "<a:b:c/>", "<xmlns:a/>", "<l xmlns:xml='urn:x'/>",
  "<m xmlns='http://www.w3.org/2000/xmlns/'/>", "\r\n", "\ufffe", "<!DOCTYPE x>", "<n/ >", "< o/>", "<p >", "</p >",
];
for (let k = 0; k < 300; k++) {
  const n = rand(6);
  let body = "";
  for (let j = 0; j < n; j++) body += pick(docPieces);
  const doc = rand(4) === 0 ? body : `<root>${body}</root>`;
  add("is-xml", doc);
  if (rand(3) === 0) add("contains-xml", "Answer: " + doc + " end", pick(xmlValues));
}

// is-html: parse5's tree building and promptfoo's checks. The sections
// from here on draw from their own generator, so that adding them left
// the cases above (and the tokenizer's and fast-xml-parser's below) as
// they were.
const outerSeed = seed;
seed = 777;
const htmlDocs = [
  "", "   ", "\n\t", "\ufeff", "<div>hi</div>", "<p>", "<P>Para", "hello", "Hello <b>world</b>", "<b>world</b> hello",
  "<body>Hello <b>world</b></body>", "<BODY>text</BODY>", "<body>text", "<body\n>text", "<body/>text", "<bodyx>text",
  "<html>text</html>", "<html><body>text</body></html>", "<html></html>", "<html>", "<head></head>", "<head>",
  "<head><title>T</title></head>", "<title>T</title>", "<!DOCTYPE html><html><head><title>x</title></head><body><p>x</p></body></html>",
  "<!doctype html>", "<!doctype html>text", "<!-- c -->", "<!-- <html> -->", "<foo>bar</foo>", "<foo></foo><!-- <html> -->",
  "<x-card>hi</x-card>", "<my-element/>", "<a-b>", "<foo-bar>text</foo-bar> tail", "<custom>text</custom>", "<svg></svg>",
  "<svg><path d='M0'/></svg>", "<svg><foreignObject><div>x</div></foreignObject></svg>", "<math><mi>x</mi></math>",
  "<template><div>x</div></template>", "<template>text</template>", "<table><tr><td>1</td></tr></table>", "<table>text</table>",
  "<td>cell</td>", "<tr><td>x</td></tr>", "<li>item</li>", "<ul><li>a</li><li>b</li></ul>", "<br>", "<br/>", "<hr>", "<img src=x>",
  "<input type=text>", "<script>alert(1)</script>", "<style>p{}</style>", "<noscript><p>x</p></noscript>", "<textarea>a</textarea>",
  "<select><option>a</option></select>", "<button>Go</button>", "<?xml version=\"1.0\"?><root/>", "  <?xml version='1.0'?><p>x</p>",
  "<?XML?><p/>", "<?xmlx?><p>x</p>", "<?php echo 1; ?>", "<?php echo 1; ?><p>x</p>", "a < b", "a < b <p>c</p>", "Vec<String>",
  "Option<T> <span>x</span>", "<p>one</p>two", "one<p>two</p>", "<div>x</div>\n\ntrailing", "&amp;", "&amp; <i>x</i>", "&nbsp;<p>x</p>",
  "\u00a0<p>x</p>\u00a0", "\u3000", "<p>\u00a0</p>", "<span>é😀</span>", "<τ>x</τ>", "<DİV>x</DİV>", "<div-İ>x</div-İ>",
  "<Html>x</Html>", "<HEAD>", "<body class=a>x</body>", "<body\tid=a>x", "<body>", "<body></body>", "<frameset></frameset>",
  "<html><frameset></frameset></html>", "<p>x</p><body>y</body>", "x<body>y</body>", "<head><body>x", "<html>x<body>y",
  "<html><head></head>text<body></body></html>", "<main>m</main>", "<article>a</article>", "<dialog open>d</dialog>", "<slot>",
  "<search>s</search>", "<center>c</center>", "<font>f</font>", "<marquee>m</marquee>", "<blink>b</blink>", "<nobr>n</nobr>",
  "<xmp><p>x</p></xmp>", "<plaintext><p>x", "<iframe>x</iframe>", "<object>o</object>", "<frame>", "<image src=x>", "<isindex>",
  "<meta charset=utf-8>", "<link rel=x>", "<base href=x>", "<menu><li>x</li></menu>", "<details><summary>s</summary>d</details>",
  "<p>unclosed <b>bold", "</p>", "</div>", "</br>", "<>", "< p>x</ p>", "<p/>text", "<!---->", "<![CDATA[x]]>",
  "<svg><![CDATA[x]]></svg>", "```html\n<div>x</div>\n```", "Here is HTML:\n<div>x</div>", "<div>x</div> Here it is.",
  "<h1>Title</h1>\n<p>Body text.</p>", "<div>\n  <p>x</p>\n</div>\n", "<code>x</code>", "<kbd>", "<wbr>", "<s>", "<q>q</q>",
  "<rp>", "<rt>", "<col>", "<caption>c</caption>", "<colgroup>", "<tbody>", "<option>o</option>", "<optgroup>",
  "<legend>l</legend>", "<fieldset>", "<param>", "<source>", "<track>", "<area>", "<map>", "<ruby>r</ruby>",
  "<dd>d</dd>", "<dt>d</dt>", "<figcaption>", "<bdi>", "<data value=1>1</data>", "<time>t</time>", "<meter>", "<progress>",
  "<output>", "<datalist>", "<label>l</label>", "<form>f</form>", "<canvas>", "<audio>", "<video>", "<picture>", "<embed>",
  "<ins>", "<del>", "<mark>", "<abbr>", "<dfn>", "<cite>", "<small>", "<strong>", "<em>", "<sub>", "<sup>", "<var>", "<samp>",
  "<u>", "<i>", "<address>", "<nav>", "<aside>", "<section>", "<header>", "<footer>", "<figure>", "<blockquote>", "<pre>",
  "<dl>", "<ol>", "<h6>", "<h7>x</h7>", "<svg><title>t</title></svg>", "<math><mtext><p>x</p></mtext></math>",
  "<svg><desc>d</desc></svg>", "<svg><clipPath/></svg>", "<div>" + "<span>".repeat(200) + "x", "<p>" + "a".repeat(5000) + "</p>",
];
for (const o of htmlDocs) {
  add("is-html", o);
  if (rand(3) === 0) add("not-is-html", o);
}
const htmlPieces = [
  "<div>", "</div>", "<p>", "</p>", "<span class='a'>", "</span>", "<body>", "</body>", "<html>", "</html>", "<head>", "</head>",
  "<title>", "</title>", "<foo>", "</foo>", "<x-y>", "text", " ", "\n", "é", "&amp;", "&lt;", "<!-- c -->", "<br>", "<table>",
  "<tr>", "<td>", "</table>", "<svg>", "</svg>", "<math>", "<template>", "</template>", "<script>", "</script>", "<style>",
  "<textarea>", "</textarea>", "<!DOCTYPE html>", "<frameset>", "<li>", "<select>", "<option>", "<?x?>", "<", ">", "/", "\"",
];
for (let k = 0; k < 220; k++) {
  const n = 1 + rand(6);
  let doc = "";
  for (let j = 0; j < n; j++) doc += pick(htmlPieces);
  add(rand(5) === 0 ? "not-is-html" : "is-html", doc);
}

// is-json and contains-json with a JSON Schema, as getAjv() (ajv 8 in
// strict mode, ajv-formats) checks it; a string schema goes through
// promptfoo's loadYaml, which the Rust side gets as `parsed_value` (the
// suite reader parses it). Its own generator, like the sections above.
seed = 31337;
// Each case compiles its own copy of the schema: getAjv() is one ajv for
// the process and caches by object, even a schema whose first compile threw
// (the meta-schema check is skipped the second time), which evalhost does
// not model.
const addSchema = (type, output, value) => {
  const c = { type, output, value: value !== null && typeof value === "object" ? structuredClone(value) : value };
  if (typeof value === "string" && value !== "" && !value.startsWith("file://")) {
    try {
      const parsed = loadYaml(value);
      if (parsed === undefined) c.parse_error = "empty YAML";
      else c.parsed_value = parsed;
    } catch (e) {
      c.parse_error = e.message;
    }
  }
  cases.push(c);
};
const person = {
  type: "object",
  properties: {
    name: { type: "string", minLength: 1 },
    age: { type: "integer", minimum: 0, maximum: 150 },
    email: { type: "string", format: "email" },
    tags: { type: "array", items: { type: "string" }, uniqueItems: true },
  },
  required: ["name", "age"],
  additionalProperties: false,
};
const withRefs = {
  definitions: {
    point: { type: "object", properties: { x: { type: "number" }, y: { type: "number" } }, required: ["x", "y"] },
    tree: { type: "object", properties: { value: { type: "integer" }, children: { type: "array", items: { $ref: "#/definitions/tree" } } }, required: ["value"] },
  },
  type: "object",
  properties: { start: { $ref: "#/definitions/point" }, end: { $ref: "#/definitions/point" }, tree: { $ref: "#/definitions/tree" } },
  required: ["start"],
};
const handSchemas = [
  person,
  withRefs,
  { type: "object" },
  { type: "array", items: { type: "number" }, minItems: 2, maxItems: 4 },
  { type: "array", items: { type: "array", items: { type: "integer", multipleOf: 2 } } },
  { type: "string", pattern: "^[A-Z]{3}-\\d+$" },
  { type: "string", format: "date-time" },
  { type: "string", format: "uri" },
  { type: "string", format: "date" },
  { type: ["string", "null"] },
  { enum: ["red", "green", 3, null, { a: 1 }] },
  { const: { ok: true } },
  { type: "object", properties: { kind: { enum: ["a", "b"] } }, required: ["kind"], if: { properties: { kind: { const: "a" } } }, then: { required: ["alpha"] }, else: { required: ["beta"] } },
  { anyOf: [{ type: "string", maxLength: 3 }, { type: "number", minimum: 10 }] },
  { oneOf: [{ type: "integer" }, { type: "number", multipleOf: 0.5 }] },
  { not: { type: "object" } },
  { allOf: [{ type: "object", required: ["a"] }, { properties: { a: { type: "boolean" } } }] },
  { type: "object", patternProperties: { "^x-": { type: "string" } }, additionalProperties: { type: "number" } },
  { type: "object", propertyNames: { pattern: "^[a-z]+$" } },
  { type: "object", dependencies: { card: ["billing"], ship: { required: ["address"] } } },
  { type: "array", contains: { type: "string", format: "ipv4" } },
  { type: "array", items: [{ type: "string" }, { type: "integer" }], additionalItems: false },
  { type: "object", minProperties: 2, maxProperties: 3 },
  { type: "number", exclusiveMinimum: 0, exclusiveMaximum: 1 },
  { type: "object", properties: { id: { type: "string", format: "uuid" }, host: { type: "string", format: "hostname" }, ip6: { type: "string", format: "ipv6" } } },
  { $ref: "#/definitions/s", definitions: { s: { type: "string" } } },
  { $ref: "#/definitions/s", type: "string", minLength: 2, definitions: { s: { maxLength: 3 } } },
  { $schema: "http://json-schema.org/draft-07/schema#", type: "object", required: ["a"] },
  { type: "object", required: ["constructor", "toString"] },
  { type: "number", multipleOf: 0.1 },
  { uniqueItems: true, items: { type: "string" } },
  { uniqueItems: true },
  { type: "object", properties: { a: { type: "object", properties: { b: { type: "array", items: { type: "object", properties: { c: { type: "string", format: "email" } } } } } } } },
  { type: "string", format: "regex" },
  { type: "string", format: "duration" },
  { type: "string", format: "json-pointer" },
  { type: "string", format: "url" },
  { type: "string", format: "uri-reference" },
  { type: "string", format: "time" },
  { type: "integer", format: "int32" },
  { description: "annotations only", title: "t", examples: [1] },
  true,
  false,
  {},
  // What ajv's compile throws (an error row in promptfoo).
  { type: "object", requried: ["a"] },
  { type: "string", format: "phone" },
  { if: { type: "string" } },
  { then: { type: "string" } },
  { additionalItems: false },
  { type: "object", properties: { ab: { type: "string" } }, patternProperties: { "^a": { type: "string" } } },
  { $ref: "#/definitions/missing" },
  { $schema: "https://json-schema.org/draft/2020-12/schema", type: "object" },
  { type: "strin" },
  { type: "object", required: "a" },
  { nullable: true },
  { type: "string", nullable: true },
  { enum: [] },
  { id: "x", type: "object" },
  { type: "string", pattern: "(" },
  { type: "string", pattern: "\\p{L}+" },
  { minContains: 1, contains: { type: "string" } },
  [{ type: "string" }],
];
const handOutputs = [
  '{"name": "Ada", "age": 36}', '{"name": "Ada", "age": 36, "email": "ada@example.com", "tags": ["x", "y"]}',
  '{"name": "", "age": -1}', '{"name": "Ada", "age": 36.5}', '{"name": "Ada"}', '{"name": "Ada", "age": 36, "extra": 1}',
  '{"name": "Ada", "age": 36, "email": "not-an-email"}', '{"name": "Ada", "age": 36, "tags": ["x", "x"]}',
  '{"start": {"x": 1, "y": 2}}', '{"start": {"x": 1}}', '{"start": {"x": 1, "y": 2}, "tree": {"value": 1, "children": [{"value": 2}, {"value": "3"}]}}',
  "[1, 2, 3]", "[1]", '[1, "2"]', "[[2, 4], [6, 7]]", '"ABC-123"', '"abc-123"', '"2024-02-29T12:00:00Z"', '"2023-02-29T12:00:00Z"',
  '"2024-01-01T25:00:00Z"', '"2024-01-01 12:00:00+01:00"', '"2024-01-01T12:00:00"', '"https://example.com/a?b=c"', '"example.com"', '"mailto:a@b.c"',
  '"2024-13-01"', '"2024-04-31"', "null", '"red"', "3", "3.0", '{"a": 1}', '{"ok": true}', '{"ok": false}', "true", "1.5", "7", "12", '"abcd"', '"ab"',
  '{"kind": "a", "alpha": 1}', '{"kind": "a", "beta": 1}', '{"kind": "b", "beta": 1}', '{"kind": "c"}', '{"a": true}', '{"a": "yes"}', "{}",
  '{"x-foo": "bar", "n": 1}', '{"x-foo": 1}', '{"n": "one"}', '{"abc": 1, "Abc": 2}', '{"card": 1}', '{"card": 1, "billing": 2}', '{"ship": 1}',
  '["10.0.0.1"]', '["a", "b"]', '["999.1.1.1", "1.2.3.4"]', '["a", 1]', '["a", 1, 2]', '[1, "a"]', '{"a": 1, "b": 2, "c": 3, "d": 4}',
  "0", "0.5", "1", '{"id": "123e4567-e89b-12d3-a456-426614174000", "host": "a.example", "ip6": "::1"}', '{"id": "nope", "host": "-bad-", "ip6": "1::2::3"}',
  '"x"', '"xyz"', '"xyzw"', "0.3", "0.7", '["a", 1, 1]', '[1, 1]', '[{"a": 1}, {"a": 1}]', '{"a": {"b": [{"c": "x@y.zz"}, {"c": "bad"}]}}',
  '"^a+$"', '"(unclosed"', '"P1Y2M"', '"P"', '"PT"', '"/a~1b"', '"a/b"', '"http://localhost"', '"http://10.1.2.3/x"', '"../rel/path"', '"12:30:00Z"',
  "2147483648", "2147483647", "Not JSON at all", "{bad json}", "", "   ", '{"a": 1} trailing', "[1, 2,]",
];
for (const s of handSchemas) {
  const outs = [];
  for (let k = 0; k < 6; k++) outs.push(pick(handOutputs));
  for (const o of outs) addSchema(pick(["is-json", "is-json", "not-is-json"]), o, s);
  addSchema("contains-json", `Here you go: ${pick(handOutputs)} and also ${pick(handOutputs)} done.`, s);
  addSchema(pick(["contains-json", "not-contains-json"]), `First ${pick(handOutputs)}, then ${pick(handOutputs)}`, s);
}
// Schemas written as YAML or JSON strings, and values that are no schema.
const yamlSchemas = [
  "type: object\nrequired: [name]\nproperties:\n  name:\n    type: string\n",
  '{"type": "array", "items": {"type": "integer"}}',
  "type: string\nformat: email",
  "type: object\nproperties:\n  n: {type: number, maximum: 10}\nadditionalProperties: false",
  "just a string", "- type: string", "type: [unclosed", "", "type: object\nfoo: bar",
];
for (const v of yamlSchemas) {
  for (const o of ['{"name": "x"}', "[1, 2]", '"a@b.co"', '{"n": 11}', "{}", "not json", '{"n": 3, "m": 1}']) {
    addSchema(pick(["is-json", "contains-json", "not-is-json"]), o, v);
  }
}
for (const v of [0, 5, true, false, null, [], [{ type: "string" }], ""]) {
  addSchema("is-json", '{"a": 1}', v);
  addSchema("is-json", "not json", v);
  addSchema("contains-json", 'x {"a": 1} y', v);
  addSchema("contains-json", "no objects", v);
}
// Outputs JSON.parse reads and strict JSON parsers may not.
for (const o of ['"\\ud800"', "1e400", "[".repeat(300) + "]".repeat(300), '{"a": 1, "a": 2}', "\ufeff{}", " \n{} \n", "-0", "1E2", "01", ".5", '"\t"']) {
  addSchema("is-json", o);
  addSchema("is-json", o, { type: ["number", "array", "object", "string"] });
}
// Random schemas from keyword pieces against random JSON.
const leafSchemas = [
  { type: "string" }, { type: "integer" }, { type: "number" }, { type: "boolean" }, { type: "null" }, { type: "array" }, { type: "object" },
  { type: ["string", "number"] }, { minLength: 2 }, { maxLength: 3 }, { pattern: "^a" }, { pattern: "\\d$" }, { minimum: 0 }, { maximum: 5 },
  { exclusiveMaximum: 3 }, { multipleOf: 3 }, { multipleOf: 0.25 }, { enum: [1, "1", true, null] }, { const: "a" }, { format: "email" },
  { format: "date" }, { format: "uri" }, { format: "ipv4" }, { format: "date-time" }, { format: "hostname" }, { format: "uuid" },
  { minItems: 1 }, { maxItems: 2 }, { uniqueItems: true }, { required: ["a"] }, { required: ["a", "b"] }, { minProperties: 1 },
  { maxProperties: 1 }, {}, true, false, { type: "string", format: "email" }, { type: "integer", minimum: 1, maximum: 3 },
];
const randSchema = (depth) => {
  const r = rand(depth > 2 ? 3 : 12);
  if (r < 3) return pick(leafSchemas);
  switch (r) {
    case 3: return { type: "object", properties: { a: randSchema(depth + 1), b: randSchema(depth + 1) }, ...(rand(2) ? { required: pick([["a"], ["b"], ["a", "b"]]) } : {}), ...(rand(3) === 0 ? { additionalProperties: rand(2) ? false : randSchema(depth + 1) } : {}) };
    case 4: return { type: "array", items: randSchema(depth + 1), ...(rand(3) === 0 ? { minItems: rand(3) } : {}) };
    case 5: return { anyOf: [randSchema(depth + 1), randSchema(depth + 1)] };
    case 6: return { oneOf: [randSchema(depth + 1), randSchema(depth + 1)] };
    case 7: return { allOf: [randSchema(depth + 1), randSchema(depth + 1)] };
    case 8: return { not: randSchema(depth + 1) };
    case 9: return { if: randSchema(depth + 1), then: randSchema(depth + 1), ...(rand(2) ? { else: randSchema(depth + 1) } : {}) };
    case 10: return { ...pick(leafSchemas), ...pick(leafSchemas) };
    default: return { type: "array", contains: randSchema(depth + 1), ...(rand(2) ? { items: randSchema(depth + 1) } : {}) };
  }
};
const leafData = [0, 1, 2, 3, 4, 6, -1, 0.5, 2.5, 1e21, "a", "ab", "abc", "a1", "b2", "x@y.co", "2024-01-31", "http://x.y", "1.2.3.4", true, false, null, "", "é😀"];
const randData = (depth) => {
  const r = rand(depth > 2 ? 2 : 5);
  if (r < 2) return pick(leafData);
  if (r === 2) return Array.from({ length: rand(4) }, () => randData(depth + 1));
  const o = {};
  for (const k of ["a", "b", "c"]) if (rand(2)) o[k] = randData(depth + 1);
  return o;
};
for (let k = 0; k < 450; k++) {
  const schema = randSchema(0);
  const data = JSON.stringify(randData(0));
  const t = rand(5);
  if (t === 0) addSchema("contains-json", `a ${JSON.stringify({ a: randData(1) })} b ${JSON.stringify({ b: randData(1) })}`, schema);
  else if (t === 1) addSchema("not-is-json", data, schema);
  else addSchema("is-json", data, schema);
}

// is-valid-openai-tools-call and is-valid-openai-function-call: a provider
// (`kind` as evalhost's reader names it, with its `tools`/`functions`)
// and outputs as promptfoo's providers return them.
seed = 4711;
const weather = { type: "function", function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" }, unit: { enum: ["c", "f"] } }, required: ["city"], additionalProperties: false } } };
const search = { type: "function", function: { name: "search", parameters: { type: "object", properties: { q: { type: "string", minLength: 1 }, limit: { type: "integer", minimum: 1 } }, required: ["q"] } } };
const noParams = { type: "function", function: { name: "ping" } };
const badSchema = { type: "function", function: { name: "bad", parameters: { type: "object", propertys: {} } } };
const toolSets = [[weather], [weather, search], [search, noParams], [badSchema], [], undefined, [{ type: "other", name: "get_weather" }]];
const call = (name, args) => ({ id: "call_1", type: "function", function: { name, arguments: args } });
const toolOutputsObj = [
  [call("get_weather", '{"city": "Paris"}')],
  [call("get_weather", '{"city": "Paris", "unit": "k"}')],
  [call("get_weather", '{"unit": "c"}')],
  [call("get_weather", '{"city": "Paris", "extra": 1}')],
  [call("get_weather", "{not json")],
  [call("get_weather", "")],
  [call("search", '{"q": "x", "limit": 0}')],
  [call("search", '{"q": ""}')],
  [call("search", '{"q": "rust"}'), call("get_weather", '{"city": 3}')],
  [call("ping", "{}")],
  [call("bad", "{}")],
  [call("unknown", "{}")],
  [{ id: "x", type: "function", function: { name: "get_weather" } }],
  [{ name: "get_weather", arguments: "{}" }],
  [],
  { role: "assistant", content: "Calling", tool_calls: [call("get_weather", '{"city": "Rome"}')] },
  { role: "assistant", content: null, tool_calls: [] },
  { tool_calls: "nope" },
  { function_call: { name: "get_weather", arguments: '{"city": "Oslo"}' } },
  { name: "get_weather", arguments: '{"city": "Oslo"}' },
  { name: "search", arguments: '{"limit": 2}' },
  { name: "get_weather", arguments: 5 },
];
const toolStrings = [
  "Sure, here is the weather.", '[{"id":"c","type":"function","function":{"name":"get_weather","arguments":"{}"}}]', "",
  "MCP Tool Result (get_weather): sunny", "MCP Tool Error (get_weather): timeout after 5s", "MCP Tool Error without parens",
];
const functionSets = [[weather.function, search.function], [search.function], undefined, [badSchema.function], [noParams.function]];
for (const o of toolOutputsObj) {
  for (const tools of toolSets) {
    const t = pick(["is-valid-openai-tools-call", "is-valid-openai-tools-call", "not-is-valid-openai-tools-call"]);
    cases.push({ type: t, output: o, provider: { kind: pick(["openai", "script", "http"]), ...(tools === undefined ? {} : { tools }) } });
  }
  for (const functions of functionSets) {
    const t = pick(["is-valid-openai-function-call", "is-valid-function-call", "not-is-valid-function-call"]);
    cases.push({ type: t, output: o, provider: { kind: pick(["openai", "openai", "script"]), ...(functions === undefined ? {} : { functions }) } });
  }
}
for (const o of toolStrings) {
  cases.push({ type: "is-valid-openai-tools-call", output: o, provider: { kind: "echo", tools: [weather] } });
  cases.push({ type: "is-valid-openai-tools-call", output: o, provider: { kind: "exec" } });
  cases.push({ type: "is-valid-openai-function-call", output: o, provider: { kind: "echo" } });
  cases.push({ type: "is-valid-function-call", output: o, provider: { kind: "http", functions: [weather.function] } });
}

seed = outerSeed;

// A provider for a case that names one: promptfoo's own OpenAI chat
// provider (which can check function calls), or an object with a config.
process.env.OPENAI_API_KEY = process.env.OPENAI_API_KEY || "unused";
const providerFor = async (spec) => {
  const config = {};
  if (spec.tools !== undefined) config.tools = structuredClone(spec.tools);
  if (spec.functions !== undefined) config.functions = structuredClone(spec.functions);
  if (spec.kind === "openai") return pf.default ? pf.default.loadApiProvider("openai:chat:gpt-4o-mini", { options: { config } }) : pf.loadApiProvider("openai:chat:gpt-4o-mini", { options: { config } });
  return { id: () => spec.kind, config };
};

const results = [];
for (const c of cases) {
  const assertion = { type: c.type };
  if (c.value !== undefined) assertion.value = c.value;
  if (c.threshold !== undefined) assertion.threshold = c.threshold;
  let r;
  try {
    r = await runAssertion({
      assertion,
      test: {},
      ...(c.provider ? { provider: await providerFor(c.provider) } : {}),
      providerResponse: { output: c.output },
      prompt: "p",
    });
  } catch (e) {
    // promptfoo makes a thrown assertion an error row.
    results.push({ ...c, error: e.message });
    continue;
  }
  results.push({ ...c, pass: r.pass, score: r.score, reason: r.reason });
}

// js-rouge's tokenizer on hand-picked and generated sentences.
const alphabet = [
  ..."abcXYZ0129 .,;:!?'\"`-()[]{}<>@#$%&", "''", "``", "...", "--", " n't", "'s ", "'LL ", "can", "not",
  "gonna", "wanna ", "'tis", "'twas", "more'n", "d'ye", "lemme", "gimme", "ſ", "K", "\u00a0", "\t", "\n", "\u0085",
  "\u2028", "\ufeff", "ʰ", "ᵃ", "ʼ", "ˈ", "²", "٣", "€", "£", "«", "»", "“", "”", "‘", "’", "(", "（", "「",
  "😀", "𝑥", "𐐷", "\u200d", "\u200c", "é", "É", "ß", "İ", "Σ", "U.S.", "e.g.", "a.m.", "3,000", "1:30",
  "x.", ".\"", "!'", "?”", ".'ʰ\"", "3.ᵃ\"", ".\"²ʰ\"",
];
const tokenInputs = [
  "He said \"don't go.\" I cannot, 3,000 U.S. dollars... gimme ``a'' (x) --y?",
  "The end.", "\"Hi,\" she said. \"Bye.\"", "It's the '90s' best.", "''quoted'' and ``quoted''",
  "A sentence.ʰ\" next", "x.\"ᵃ\" y", "He'll go; she'd stay & they've left @ 5% #1 $3.",
  "I wanna go.", "wanna", "Cannot CANNOT cannoT", "'Tis the season.", "ſannot", "gon\u200dna", "gonna",
];
for (let k = 0; k < 1500; k++) {
  const n = 1 + rand(14);
  let s = "";
  for (let j = 0; j < n; j++) s += pick(alphabet);
  tokenInputs.push(s);
}
const tokens = tokenInputs.map((input) => ({ input, tokens: rouge.treeBankTokenize(input) }));

// fast-xml-parser's object shape (primitives as null), or what it throws.
const { XMLParser } = await import(path.join(modules, "fast-xml-parser/src/fxp.js"));
const shape = (v) =>
  Array.isArray(v) ? v.map(shape) : v && typeof v === "object" ? Object.fromEntries(Object.keys(v).map((k) => [k, shape(v[k])])) : null;
const xmlAlphabet = [
  "<a>", "</a>", "<b>", "</b>", "<a/>", "<b x='1'>", "<c y=\"2\" z/>", "text", " ", "\t", "\r\n", "<?xml version=\"1.0\"?>",
  "<?pi?>", "<!-- c -->", "<![CDATA[", "]]>", "<![CDATA[d]]>", "&amp;", "<", ">", "/", "'", "\"", "=", "<toString>",
  "<valueOf/>", "</toString>", "<isPrototypeOf>", "<x:y>", "</x:y>", "<!DOCTYPE r>", "0", "true", "é", "<é>", "</é>",
];
const fxpInputs = [...xmls];
for (let k = 0; k < 800; k++) {
  const n = 1 + rand(12);
  let s = "";
  for (let j = 0; j < n; j++) s += pick(xmlAlphabet);
  fxpInputs.push(s);
}
const fxp = fxpInputs.map((input) => {
  try {
    const parsed = new XMLParser({ allowBooleanAttributes: true, ignoreAttributes: false, parseAttributeValue: true, parseTagValue: true }).parse(input);
    return { input, shape: shape(parsed) };
  } catch (e) {
    return { input, error: e.message };
  }
});

const lines = (xs) => "[\n" + xs.map((x) => JSON.stringify(x)).join(",\n") + "\n]";
writeFileSync(
  path.join(here, "oracle.json"),
  `{"promptfoo": "0.121.20",\n"assertions": ${lines(results)},\n"tokenize": ${lines(tokens)},\n"fxp": ${lines(fxp)}}\n`,
);
console.log(`${results.length} assertion cases, ${tokens.length} tokenizer cases, ${fxp.length} fast-xml-parser cases`);
