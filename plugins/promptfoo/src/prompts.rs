//! promptfoo's grading prompts, word for word: the templates promptfoo
//! 0.121.20 renders for its model-graded assertion types when a test gives
//! no `rubricPrompt` (its `src/prompts/`, read from the published package,
//! `dedent` applied). A grading model answers what it is asked, so the
//! same assertion must ask the same question to give the same number; they
//! are rendered as promptfoo renders them (`grading::render`).
//!
//! Copyright (c) 2025 Promptfoo, MIT licence (the main codebase; see
//! `plugins/promptfoo/PROMPTFOO-LICENSE`).

/// `llm-rubric` (`DEFAULT_GRADING_PROMPT`).
pub const LLM_RUBRIC: &str = r##"[{"role":"system","content":"You are grading output according to a user-specified rubric. If the statement in the rubric is true, then the output passes the test. You respond with a JSON object with this structure: {reason: string, pass: boolean, score: number}\n\nExamples:\n\n<Output>Hello world</Output>\n<Rubric>Content contains a greeting</Rubric>\n{\"reason\": \"the content contains the word 'Hello'\", \"pass\": true, \"score\": 1.0}\n\n<Output>Avast ye swabs, repel the invaders!</Output>\n<Rubric>Does not speak like a pirate</Rubric>\n{\"reason\": \"'avast ye' is a common pirate term\", \"pass\": false, \"score\": 0.0}"},{"role":"user","content":"<Output>\n{{ output }}\n</Output>\n<Rubric>\n{{ rubric }}\n</Rubric>"}]"##;

/// `search-rubric` (`DEFAULT_WEB_SEARCH_PROMPT`).
pub const SEARCH_RUBRIC: &str = r##"[{"role":"system","content":"You are grading output according to a user-specified rubric, with the ability to search the web for current information. If the statement in the rubric is true, then the output passes the test. You respond with a JSON object with this structure: {reason: string, pass: boolean, score: number}\n\nYou MUST search the web when:\n- The rubric asks about current information (prices, weather, news, etc.)\n- Facts need to be verified against recent data\n- The rubric references time-sensitive information\n\nExamples:\n\n<Output>The current CEO of Microsoft is Satya Nadella</Output>\n<Rubric>Contains accurate information about Microsoft's leadership</Rubric>\n{\"reason\": \"I searched and confirmed Satya Nadella is indeed the current CEO of Microsoft\", \"pass\": true, \"score\": 1.0}\n\n<Output>Bitcoin is trading at $45,000</Output>\n<Rubric>Provides current Bitcoin price within 10% accuracy</Rubric>\n{\"reason\": \"Web search shows Bitcoin is currently trading at $98,000, not $45,000. The output is off by more than 50%\", \"pass\": false, \"score\": 0.0}"},{"role":"user","content":"<Output>\n{{ output }}\n</Output>\n<Rubric>\n{{ rubric }}\n</Rubric>"}]"##;

/// `factuality` (`PROMPTFOO_FACTUALITY_PROMPT`).
pub const FACTUALITY: &str = r##"[{"role":"system","content":"You are a precise factuality evaluator that compares a submitted answer to an expert answer. \n\nYour task is to analyze the factual content while ignoring differences in style, grammar, or punctuation.\nYou must categorize the submission into one of these options:\n\n(A) The submitted answer is a subset of the expert answer and is fully consistent with it.\n(B) The submitted answer is a superset of the expert answer and is fully consistent with it.\n(C) The submitted answer contains all the same details as the expert answer.\n(D) There is a disagreement between the submitted answer and the expert answer.\n(E) The answers differ, but these differences don't matter from the perspective of factuality.\n\nRespond ONLY with a JSON object in this format:\n{\n  \"category\": \"[LETTER]\",\n  \"reason\": \"[DETAILED EXPLANATION]\"\n}\n\n- The \"category\" must be a single letter A, B, C, D, or E.\n- Provide a clear, detailed explanation in the \"reason\" field.\n- Your response must be valid JSON with no additional text."},{"role":"user","content":"I need you to compare these answers:\n\n<question>\n{{input}}\n</question>\n\n<expert_answer>\n{{ideal}}\n</expert_answer>\n\n<submitted_answer>\n{{completion}}\n</submitted_answer>\n\nPlease analyze the factual relationship between these answers according to the categories you've been given."}]"##;

/// `model-graded-closedqa` (`OPENAI_CLOSED_QA_PROMPT`).
pub const CLOSED_QA: &str = r##"[{"role":"system","content":"You are assessing a submitted answer on a given task based on a criterion. Here is the data:\n[BEGIN DATA]\n***\n[Task]: {{input}}\n***\n[Submission]: {{completion}}\n***\n[Criterion]: {{criteria}}\n***\n[END DATA]\nDoes the submission meet the criterion? First, write out in a step by step manner your reasoning about the criterion to be sure that your conclusion is correct. Avoid simply stating the correct answers at the outset. Then print only the single character \"Y\" or \"N\" (without quotes or punctuation) on its own line corresponding to the correct answer. At the end, repeat just the letter again by itself on a new line.\n\n    Reasoning:"}]"##;

/// `select-best` (`SELECT_BEST_PROMPT`).
pub const SELECT_BEST: &str = r##"[{"role":"system","content":"You are comparing multiple pieces of text to see which best fits the following criteria: {{criteria}}\n\nHere are the pieces of text:\n\n{% for output in outputs %}\n<Text index=\"{{ loop.index0 }}\">\n{{ output }}\n</Text>\n{% endfor %}\n\nOutput the index of the text that best fits the criteria. You must output a single integer."}]"##;

/// `g-eval`, the steps (`GEVAL_PROMPT_STEPS`).
pub const GEVAL_STEPS: &str = r##"
Given evaluation criteria that outline how you should judge a piece of text, generate 3-4 concise evaluation steps applicable to any text based on the criteria below and designed to check whether the criteria are satisfied by the text.

**EVALUATION CRITERIA**
{{criteria}}

**OUTPUT FORMAT**
IMPORTANT:
- Return output ONLY as a minified JSON object (no code fences).
- The JSON object must contain a single key, "steps", whose value is a list of strings.
- Each string must represent one evaluation step.
- Do NOT include any explanations, commentary, extra text, or additional formatting.

Format:
{"steps": <list_of_strings>}

Example:
{"steps":["<Evaluation Step 1>","<Evaluation Step 2>","<Evaluation Step 3>","<Evaluation Step 4>"]}

Here are the 3-4 concise evaluation steps, formatted as required in a minified JSON:
JSON:
"##;

/// `g-eval`, the score (`GEVAL_PROMPT_EVALUATE`).
pub const GEVAL_EVALUATE: &str = r##"
You will be given one Reply for a Prompt below. Your task is to rate the Reply on one metric.
Please make sure you read and understand these instructions carefully. Please keep this document open while reviewing, and refer to it as needed.

**Evaluation Criteria**
{{criteria}}

**Evaluation Steps**
- {{steps}}
Given the evaluation steps, return a JSON with two keys: 
  1) a "score" key that MUST be an integer from 0 to {{maxScore}}, where {{maxScore}} indicates that the condition described by the Evaluation Criteria is fully and clearly observed in the Reply according to the Evaluation Steps, and 0 indicates that it is not observed at all;
  2) a "reason" key, a reason for the given score, but DO NOT QUOTE THE SCORE in your reason. Please mention specific information from Prompt and Reply in your reason, but be very concise with it!

**Prompt**
{{input}}

**Reply**
{{output}}

**OUTPUT FORMAT**
IMPORTANT: 
- Return output ONLY as a minified JSON object (no code fences).
- The JSON object must contain exactly two keys: "score" and "reason".
- No additional words, explanations, or formatting are needed.
- Absolutely no additional text, explanations, line breaks, or formatting outside the JSON object are allowed.

Example JSON:
{"score":0,"reason":"The text of reply does not follow the evaluation criteria provided."}

Here is the final evaluation in the required minified JSON format:
JSON:
"##;

/// `answer-relevance` (`ANSWER_RELEVANCY_GENERATE`).
pub const ANSWER_RELEVANCE: &str = r##"Generate question for the given answer.
Answer:
The PSLV-C56 mission is scheduled to be launched on Sunday, 30 July 2023 at 06:30 IST / 01:00 UTC. It will be launched from the Satish Dhawan Space Centre, Sriharikota, Andhra Pradesh, India
Question: When is the scheduled launch date and time for the PSLV-C56 mission, and where will it be launched from?

Answer:{{answer}}
Question:"##;

/// `context-recall` (`CONTEXT_RECALL`).
pub const CONTEXT_RECALL: &str = r##"Given a context, and an answer, analyze each sentence in the answer and classify if the sentence can be attributed to the given context or not.
Think in steps and reason before coming to conclusion.

context: Albert Einstein (14 March 1879 – 18 April 1955) was a German-born theoretical physicist,widely held to be one of the greatest and most influential scientists of all time. Best known for developing the theory of relativity, he also made important contributions to quantum mechanics, and was thus a central figure in the revolutionary reshaping of the scientific understanding of nature that modern physics accomplished in the first decades of the twentieth century. His mass–energy equivalence formula E = mc2, which arises from relativity theory, has been called "the world's most famous equation". He received the 1921 Nobel Prize in Physics "for his services to theoretical physics, and especially for his discovery of the law of the photoelectric effect", a pivotal step in the development of quantum theory. His work is also known for its influence on the philosophy of science. In a 1999 poll of 130 leading physicists worldwide by the British journal Physics World, Einstein was ranked the greatest physicist of all time. His intellectual achievements and originality have made Einstein synonymous with genius.
answer: Albert Einstein born in 14 March 1879 was  German-born theoretical physicist, widely held to be one of the greatest and most influential scientists of all time. He received the 1921 Nobel Prize in Physics "for his services to theoretical physics. He published 4 papers in 1905.  Einstein moved to Switzerland in 1895
classification
1. Albert Einstein born in 14 March 1879 was  German-born theoretical physicist, widely held to be one of the greatest and most influential scientists of all time. The date of birth of Einstein is mentioned clearly in the context. So [Attributed]
2. He received the 1921 Nobel Prize in Physics "for his services to theoretical physics. The exact sentence is present in the given context. So [Attributed]
3. He published 4 papers in 1905. There is no mention about papers he wrote in given the context. So [Not Attributed]
4. Einstein moved to Switzerland in 1895. There is not supporting evidence for this in the given the context. So [Not Attributed]

context:{{context}}
answer:{{groundTruth}}
classification:
"##;

/// `context-relevance` (`CONTEXT_RELEVANCE`).
pub const CONTEXT_RELEVANCE: &str = r##"Please extract relevant sentences from the provided context that is absolutely required answer the following query. If no relevant sentences are found, or if you believe the query cannot be answered from the given context, return the phrase "Insufficient Information".  While extracting candidate sentences you're not allowed to make any changes to sentences from given context.

query: {{query}}
context: {{context}}
candidate sentences:
"##;

/// `context-faithfulness`, the statements (`CONTEXT_FAITHFULNESS_LONGFORM`).
pub const FAITHFULNESS_STATEMENTS: &str = r##"Given a question and answer, create one or more statements from each sentence in the given answer.
question: Who was  Albert Einstein and what is he best known for?
answer: He was a German-born theoretical physicist, widely acknowledged to be one of the greatest and most influential physicists of all time. He was best known for developing the theory of relativity, he also made important contributions to the development of the theory of quantum mechanics.
statements:
Albert Einstein was born in Germany.
Albert Einstein was best known for his theory of relativity.
question: Cadmium Chloride is slightly soluble in this chemical, it is also called what?
answer: alcohol
statements:
Cadmium Chloride is slightly soluble in alcohol.
question: Were Shahul and Jithin of the same nationality?
answer: They were from different countries.
statements:
Shahul and Jithin were from different countries.
question:{{question}}
answer: {{answer}}
statements:
"##;

/// `context-faithfulness`, the verdicts (`CONTEXT_FAITHFULNESS_NLI_STATEMENTS`).
pub const FAITHFULNESS_NLI: &str = r##"Prompt: Natural language inference
Consider the given context and following statements, then determine whether they are supported by the information present in the context.Provide a brief explanation for each statement before arriving at the verdict (Yes/No). Provide a final verdict for each statement in order at the end in the given format. Do not deviate from the specified format.

Context:
John is a student at XYZ University. He is pursuing a degree in Computer Science. He is enrolled in several courses this semester, including Data Structures, Algorithms, and Database Management. John is a diligent student and spends a significant amount of time studying and completing assignments. He often stays late in the library to work on his projects.
statements:
1. John is majoring in Biology.
2. John is taking a course on Artificial Intelligence.
3. John is a dedicated student.
4. John has a part-time job.
5. John is interested in computer programming.

Answer:
1. John is majoring in Biology.
Explanation: John's major is explicitly mentioned as Computer Science. There is no information suggesting he is majoring in Biology.  Verdict: No.
2. John is taking a course on Artificial Intelligence.
Explanation: The context mentions the courses John is currently enrolled in, and Artificial Intelligence is not mentioned. Therefore, it cannot be deduced that John is taking a course on AI. Verdict: No.
3. John is a dedicated student.
Explanation: The prompt states that he spends a significant amount of time studying and completing assignments. Additionally, it mentions that he often stays late in the library to work on his projects, which implies dedication. Verdict: Yes.
4. John has a part-time job.
Explanation: There is no information given in the context about John having a part-time job. Therefore, it cannot be deduced that John has a part-time job.  Verdict: No.
5. John is interested in computer programming.
Explanation: The context states that John is pursuing a degree in Computer Science, which implies an interest in computer programming. Verdict: Yes.
Final verdict for each statement in order: No. No. Yes. No. Yes.
context:
{{context}}
statements:
{{statements|join("\n")}}
Answer:
"##;
