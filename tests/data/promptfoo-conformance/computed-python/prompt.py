def make_prompt(context):
    return "Tell me about {{topic}} (%s): {{fact}}" % context["provider"]["id"]
