//! The `promptfoo-*` assertion types this plugin grades, with their
//! descriptions, and which of them ask the grading model or report a
//! score.

/// Each type (without `promptfoo-`) and its description.
pub(crate) const TYPES: &[(&str, &str)] = &[
    (
        "equals",
        "Output equals the value exactly (an object value: the output parsed as JSON equals it)",
    ),
    (
        "contains",
        "Output contains the value (case-sensitive; a number is its text)",
    ),
    ("icontains", "Output contains the value, ignoring case"),
    (
        "contains-any",
        "Output contains one of the values (a list, or a comma string)",
    ),
    (
        "contains-all",
        "Output contains every value (a list, or a comma string)",
    ),
    (
        "icontains-any",
        "Output contains one of the values, ignoring case",
    ),
    (
        "icontains-all",
        "Output contains every value, ignoring case",
    ),
    ("starts-with", "Output starts with the value (no trimming)"),
    (
        "regex",
        "A JavaScript regular expression matches the output",
    ),
    (
        "is-json",
        "Output parses as JSON (and, with a JSON Schema value, conforms to it, as ajv checks it)",
    ),
    (
        "contains-json",
        "Output contains a JSON object (and, with a JSON Schema value, one that conforms to it)",
    ),
    (
        "is-valid-openai-tools-call",
        "Every tool call of the output is an OpenAI tool call whose arguments match the provider's `tools`",
    ),
    (
        "is-valid-openai-function-call",
        "The output is an OpenAI function call whose arguments match the provider's `functions`",
    ),
    (
        "is-valid-function-call",
        "The output is a function call whose arguments match the provider's `functions`",
    ),
    ("word-count", "Output has N words, or between min and max"),
    (
        "levenshtein",
        "Edit distance to the value is at most the threshold (default 5)",
    ),
    (
        "latency",
        "The target answered within `threshold` milliseconds",
    ),
    ("cost", "The answer cost at most `threshold` dollars"),
    (
        "bleu",
        "BLEU-4 against the reference(s) reaches the threshold (default 0.5)",
    ),
    (
        "gleu",
        "GLEU against the reference(s) reaches the threshold (default 0.5)",
    ),
    (
        "is-refusal",
        "Output is a refusal (an empty output counts as one, with score 0)",
    ),
    (
        "contains-html",
        "Output contains HTML (promptfoo's indicator heuristics)",
    ),
    (
        "tool-call-f1",
        "F1 of the expected tool names and those the output calls reaches the threshold (default 1)",
    ),
    (
        "rouge-n",
        "ROUGE-1 F-measure against the value reaches the threshold (default 0.75)",
    ),
    (
        "is-xml",
        "Output is well-formed XML holding the required element paths, if any",
    ),
    (
        "contains-xml",
        "Output contains an XML element holding the required element paths, if any",
    ),
    (
        "is-html",
        "Output is HTML: parsed as a browser parses it, it holds a recognized element and no bare text",
    ),
    (
        "finish-reason",
        "The provider's finish reason (normalised as promptfoo normalises it) equals the value",
    ),
    (
        "perplexity",
        "exp(-mean token log-probability) is at most the threshold (no threshold: passes)",
    ),
    (
        "perplexity-score",
        "The logistic of the mean token log-probability, at least the threshold",
    ),
    (
        "meteor",
        "METEOR against the reference(s) (exact, Porter-stem and WordNet-synonym matches, fragmentation penalty) reaches the threshold (default 0.5)",
    ),
    (
        "llm-rubric",
        "The grading model judges the output against the rubric (JSON pass, score, reason)",
    ),
    (
        "model-graded-closedqa",
        "The grading model says the output meets the criterion (its reply ends with Y)",
    ),
    (
        "factuality",
        "The grading model places the output against the reference: a disagreement (D) fails",
    ),
    (
        "context-recall",
        "The grading model attributes each sentence of the expected answer to the context, or not; the attributed share reaches the threshold (default 0)",
    ),
    (
        "context-relevance",
        "The grading model copies the context's sentences the query needs; their share of the context reaches the threshold (default 0)",
    ),
    (
        "context-faithfulness",
        "The grading model breaks the output into statements and checks each against the context; the supported share reaches the threshold (default 0)",
    ),
    (
        "similar",
        "The output's embedding is close to the value's (cosine, dot product, or euclidean distance) at the threshold (default 0.75)",
    ),
    (
        "answer-relevance",
        "The grading model writes the question the output answers, three times; their mean embedding similarity to the query reaches the threshold (default 0)",
    ),
    (
        "search-rubric",
        "A grading model that searches the web judges the output against the rubric (JSON pass, score, reason)",
    ),
    (
        "select-best",
        "The grading model picks, among the outputs of every prompt and provider for a test, the one that best fits the criteria",
    ),
    (
        "g-eval",
        "G-Eval: the grading model writes steps for each criterion, then scores the output 0-10 by them; the mean over 10 reaches the threshold (default 0.7)",
    ),
];

/// Types that ask the grading model (capability `llm`).
pub const MODEL_GRADED: &[&str] = &[
    "llm-rubric",
    "model-graded-closedqa",
    "factuality",
    "g-eval",
    "context-recall",
    "context-relevance",
    "context-faithfulness",
    "similar",
    "answer-relevance",
    "search-rubric",
    "select-best",
];

/// Types whose score is not 0 or 1: the plugin's verdict decides.
pub(crate) const SCORED: &[&str] = &[
    "bleu",
    "gleu",
    "tool-call-f1",
    "rouge-n",
    "perplexity-score",
    "meteor",
    "llm-rubric",
    "g-eval",
    "context-recall",
    "context-relevance",
    "context-faithfulness",
    "similar",
    "answer-relevance",
    "search-rubric",
];
