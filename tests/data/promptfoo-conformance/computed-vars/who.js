module.exports = function (varName, prompt, vars, provider) {
  return { output: `${varName} is ${provider.label || provider.id()} for ${vars.topic}` };
};
