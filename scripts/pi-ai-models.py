#!/usr/bin/env python3
"""Writes host/src/target/models.rs: the model table AgentV 4.42.4 prices
and sizes its direct-API calls with (pi-ai's `models.generated.js`, the
version agentv@4.42.4 installs), for the providers evalhost calls the same
way: anthropic, google, azure-openai-responses, openai, openrouter.

    scripts/pi-ai-models.py     # needs target/agentv (npm install agentv@4.42.4)

A model missing from the table gets pi-ai's fallback: no reasoning, 16,384
max tokens, no price (so no cost is reported, as AgentV reports none).
"""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent
SOURCE = ROOT / "target/agentv/node_modules/@earendil-works/pi-ai/dist/models.generated.js"
OUT = ROOT / "host/src/target/models.rs"
PROVIDERS = ["anthropic", "google", "azure-openai-responses", "openai", "openrouter"]


def main():
    text = SOURCE.read_text()
    version = (SOURCE.parent.parent / "package.json").read_text()
    version = re.search(r'"version":\s*"([^"]+)"', version).group(1)
    rows = []
    for provider in PROVIDERS:
        start = text.index(f'\n    "{provider}": {{')
        end = text.find('\n    },\n', start)
        block = text[start:end]
        for m in re.finditer(
            r'id: "([^"]+)",.*?reasoning: (true|false),(.*?)cost: \{\s*input: ([\d.e-]+),\s*output: ([\d.e-]+),\s*cacheRead: ([\d.e-]+),\s*cacheWrite: ([\d.e-]+),.*?maxTokens: (\d+),',
            block,
            re.S,
        ):
            mid, reasoning, between, ci, co, cr, cw, mt = m.groups()
            # What pi-ai sends to switch reasoning off on the Responses API:
            # `thinkingLevelMap.off`, "none" when the map has no `off`, and
            # nothing when it is null (the model cannot stop reasoning).
            off = re.search(r'"off":\s*(null|"[^"]*")', between)
            off = "None" if off and off.group(1) == "null" else f'Some({off.group(1)})' if off else 'Some("none")'
            rows.append((provider, mid, reasoning, ci, co, cr, cw, mt, off))
    lines = [
        "//! The model table AgentV 4.42.4's direct-API providers use (pi-ai",
        f"//! {version}'s `models.generated.js`): whether a model reasons (so a",
        "//! thinking budget is sent), its output-token ceiling (Anthropic's",
        "//! default `max_tokens` is a third of it) and its price per million",
        "//! tokens. Written by `scripts/pi-ai-models.py`; do not edit.",
        "",
        "/// One model.",
        "#[derive(Debug, Clone, Copy, PartialEq)]",
        "pub struct Model {",
        "    /// pi-ai's provider name.",
        "    pub provider: &'static str,",
        "    /// The model id.",
        "    pub id: &'static str,",
        "    /// Whether it reasons (extended thinking).",
        "    pub reasoning: bool,",
        "    /// USD per million input, output, cache-read and cache-write tokens.",
        "    pub cost: [f64; 4],",
        "    /// The most output tokens it gives.",
        "    pub max_tokens: u64,",
        "    /// The reasoning effort that switches a reasoning model's thinking",
        "    /// off on the Responses API; none when it cannot be switched off.",
        "    pub reasoning_off: Option<&'static str>,",
        "}",
        "",
        "/// Every model of the providers evalhost calls directly.",
        "#[rustfmt::skip]",
        "pub const MODELS: &[Model] = &[",
    ]
    for provider, mid, reasoning, ci, co, cr, cw, mt, off in rows:
        f = lambda x: x if "." in x or "e" in x else x + ".0"
        lines.append(
            f'    Model {{ provider: "{provider}", id: "{mid}", reasoning: {reasoning}, cost: [{f(ci)}, {f(co)}, {f(cr)}, {f(cw)}], max_tokens: {mt}, reasoning_off: {off} }},'
        )
    lines += [
        "];",
        "",
        "/// The model `id` of `provider`, if pi-ai knows it.",
        "pub fn find(provider: &str, id: &str) -> Option<&'static Model> {",
        "    MODELS.iter().find(|m| m.provider == provider && m.id == id)",
        "}",
        "",
    ]
    OUT.write_text("\n".join(lines))
    print(f"{OUT.relative_to(ROOT)}: {len(rows)} models from pi-ai {version}")


if __name__ == "__main__":
    main()
