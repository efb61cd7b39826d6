import json


def get_transform(output, context):
    return output.upper()


def count_words_with_vars(output, context):
    # two words of output, plus the number of vars
    return str(len(output.split()) + len(context["vars"]))


def as_json(output, context):
    return json.dumps({"text": output, "name": context["vars"]["name"]})
