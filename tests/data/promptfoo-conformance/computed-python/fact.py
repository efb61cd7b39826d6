def get_var(var_name, prompt, other_vars):
    return {"output": "%s of %s\n" % (var_name, other_vars["topic"].lower())}
