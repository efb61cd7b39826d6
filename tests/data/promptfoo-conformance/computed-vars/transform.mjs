export function shout(vars, context) {
  return { topic: vars.topic.toUpperCase(), uuidShape: typeof context.uuid };
}
