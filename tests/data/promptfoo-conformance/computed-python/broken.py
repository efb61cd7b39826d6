def get_var(var_name, prompt, other_vars):
    return {"error": "no facts about " + other_vars["topic"]}
