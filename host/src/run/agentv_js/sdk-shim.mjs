// `@agentv/sdk` inside a sandboxed AgentV assertion: `defineAssertion`
// registers the handler (AgentV's runs it at once on stdin).
let registered;
export function defineAssertion(handler) {
  registered = handler;
}
export function takeHandler() {
  return registered;
}
