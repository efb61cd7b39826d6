def get_transform(vars, context):
    return {"topic": vars["topic"].upper(), "has_uuid": bool(context.get("uuid"))}
