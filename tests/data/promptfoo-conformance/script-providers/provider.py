# A promptfoo Python provider: call_api(prompt, options, context).
def call_api(prompt, options, context):
    q = context["vars"]["q"]
    return {"output": f"{options['config']['prefix']} {prompt} [{q}]"}


def structured(prompt, options, context):
    return {"output": {"answer": prompt.upper(), "n": len(prompt)}}
